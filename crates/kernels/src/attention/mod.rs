//! Scaled dot-product attention with the bits of MLX 0.32's CPU
//! `fast::scaled_dot_product_attention` (its fallback in `fast.cpp`, which the CPU backend
//! always takes), per batch row and query head `h` (kv head `h / (Hq / Hkv)`):
//!
//! 1. `q' = T(T(scale) · q)`;
//! 2. `s = matmul(q', kᵀ)` in `T` (the [`gemm`](crate::gemm) bits: a k-sum over the head
//!    dimension in order, rounded to `T` once);
//! 3. with a mask, `s = T(s + mask)`;
//! 4. `p = softmax(s, precise = true)` over the keys (`backend/cpu/softmax.cpp`, simd width 1):
//!    the running maximum (a NaN sticks), `e = exp(s − max)` with MLX's polynomial
//!    [`exp`](crate::exp::exp), a sequential `f32` sum of the `e`, `inv = 1 / sum`, `p = T(e ·
//!    inv)` (bf16 computes in `f32` and rounds once; float32 stores `e` and scales it);
//! 5. `out = matmul(p, v)` in `T` (a k-sum over the keys in order).
//!
//! - [`reference`](reference()): the scalar twin, written as those op steps.
//! - `driver`: the fast path. For a block of 16 queries it computes the scores transposed
//!   (keys × queries, the queries in the vector lanes) with the GEMM micro-kernel, runs the
//!   softmax lane-wise down the keys (so each query's sum keeps its order), and multiplies
//!   the probabilities by `v` with the same micro-kernel; nothing of size `L × L` is stored.
//! - `pack`: `k`, `v` and a block of `q` as the micro-kernel's panels; `softmax`: the lanes.

mod driver;
mod pack;
mod reference;
mod softmax;
#[cfg(test)]
mod tests;

pub use reference::reference;

use crate::gemm::MicroKernel;
use crate::{Error, Float, Result};

/// The extents of one attention: `q` is `[batch, queries, query_heads, head_dim]`, `k` and `v`
/// `[batch, keys, kv_heads, head_dim]` (token-major, as the projections produce them), the
/// output like `q`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionShape {
    pub batch: usize,
    pub query_heads: usize,
    pub kv_heads: usize,
    pub queries: usize,
    pub keys: usize,
    pub head_dim: usize,
}

/// An additive mask, row-major `[batch, heads, queries, keys]` with `batch` 1 or the
/// attention's batch and `heads` 1 or its query heads (broadcast over the axes of extent 1,
/// as MLX broadcasts it).
#[derive(Debug, Clone, Copy)]
pub struct MaskRef<'a, T> {
    data: &'a [T],
    batch: usize,
    heads: usize,
}

impl<'a, T: Float> MaskRef<'a, T> {
    /// A mask of `batch × heads` blocks of `queries × keys` values (checked against the
    /// attention's shape by [`attention`]).
    pub fn new(data: &'a [T], batch: usize, heads: usize) -> Self {
        MaskRef { data, batch, heads }
    }

    /// Row `query` of the block for batch row `b` and query head `h`, as broadcast.
    #[inline]
    pub(crate) fn row(&self, shape: &AttentionShape, b: usize, h: usize, query: usize) -> &'a [T] {
        let block = (if self.batch == 1 { 0 } else { b }) * self.heads + if self.heads == 1 { 0 } else { h };
        let start = (block * shape.queries + query) * shape.keys;
        &self.data[start..start + shape.keys]
    }

    /// Whether every value is `±0` (a single image's padding-free mask: adding it changes no
    /// score, see the driver). Scans the data in parallel chunks (each without a branch per
    /// value), until the first chunk with a nonzero value.
    pub(crate) fn is_zero(&self) -> bool {
        use rayon::prelude::*;
        const CHUNK: usize = 1 << 14;
        self.data.par_chunks(CHUNK).all(|chunk| chunk.iter().fold(true, |zero, x| zero & (x.to_f32() == 0.0)))
    }

    /// Whether every query head sees the same mask.
    pub(crate) fn shared_by_heads(&self) -> bool {
        self.heads == 1
    }
}

/// One attention's inputs: `q` `[B, Lq, Hq, D]`, `k` and `v` `[B, Lk, Hkv, D]` with `Hkv`
/// dividing `Hq` (token-major, as [`AttentionShape`] lays them out), the scale of the scores and
/// an optional additive mask. Checked against `shape` (and the output) by every entry point.
#[derive(Debug, Clone, Copy)]
pub struct AttentionInputs<'a, T> {
    pub shape: AttentionShape,
    pub q: &'a [T],
    pub k: &'a [T],
    pub v: &'a [T],
    pub scale: f32,
    pub mask: Option<MaskRef<'a, T>>,
}

/// `out = softmax(T(T(scale)·q) · kᵀ + mask) · v` with MLX 0.32's CPU bits for `T` (see the
/// module docs): query head `h` reads kv head `h / (Hq / Hkv)`, as MLX's grouped-query fallback
/// does, and `out` is `[B, Lq, Hq, D]`. With no keys the output is zeros. Runs over all cores;
/// the bits do not depend on the number of threads.
///
/// A float32 NaN in the output may differ from MLX's in its payload or sign; bf16 NaNs are
/// `0x7FC0` as MLX's.
pub fn attention<T: Float>(inputs: AttentionInputs<'_, T>, out: &mut [T]) -> Result<()> {
    attention_with(MicroKernel::detect(), inputs, out)
}

/// [`attention`] with a chosen micro-kernel (for tests and benchmarks: both give the same
/// bits).
pub fn attention_with<T: Float>(kernel: MicroKernel, inputs: AttentionInputs<'_, T>, out: &mut [T]) -> Result<()> {
    inputs.check(out)?;
    if !out.is_empty() {
        driver::run(kernel, inputs, out);
    }
    Ok(())
}

impl<T: Float> AttentionInputs<'_, T> {
    /// The checks shared by the entry points: slices of the shape's lengths (`out` too), heads
    /// that group, a mask that broadcasts.
    pub(crate) fn check(&self, out: &[T]) -> Result<()> {
        let AttentionInputs { shape, q, k, v, mask, .. } = self;
        let AttentionShape { batch, query_heads, kv_heads, queries, keys, head_dim } = *shape;
        let fail = |what: String| Err(Error::shape("attention", what));
        if query_heads == 0 || kv_heads == 0 || query_heads % kv_heads != 0 {
            return fail(format!("{kv_heads} kv heads do not divide {query_heads} query heads"));
        }
        let len = |dims: &[usize]| dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        let q_len = len(&[batch, queries, query_heads, head_dim]);
        let kv_len = len(&[batch, keys, kv_heads, head_dim]);
        for (name, got, want) in
            [("q", q.len(), q_len), ("k", k.len(), kv_len), ("v", v.len(), kv_len), ("out", out.len(), q_len)]
        {
            if want != Some(got) {
                return fail(format!("{name} holds {got} elements, {shape:?} needs {want:?}"));
            }
        }
        if let Some(mask) = mask {
            if !(mask.batch == 1 || mask.batch == batch) || !(mask.heads == 1 || mask.heads == query_heads) {
                return fail(format!(
                    "a mask of {} × {} blocks does not broadcast to {batch} × {query_heads}",
                    mask.batch, mask.heads
                ));
            }
            let want = len(&[mask.batch, mask.heads, queries, keys]);
            if want != Some(mask.data.len()) {
                return fail(format!("the mask holds {} elements, {want:?} expected", mask.data.len()));
            }
        }
        Ok(())
    }
}
