//! The scalar twin of MLX's CPU attention fallback: the op steps one after the other, each
//! product through [`gemm::reference`](crate::gemm::reference()), the softmax written as
//! `softmax.cpp` runs it with a simd width of 1. It defines the bits
//! [`attention`](super::attention) reproduces.

use super::{AttentionInputs, AttentionShape};
use crate::exp::exp;
use crate::gemm::{self, GemmOptions, MatRef};
use crate::{ElementType, Float, Result};

/// [`attention`](super::attention), computed the slow way (same contract and errors).
pub fn reference<T: Float>(inputs: AttentionInputs<'_, T>, out: &mut [T]) -> Result<()> {
    inputs.check(out)?;
    if out.is_empty() {
        return Ok(());
    }
    let AttentionInputs { shape, q, k, v, scale, mask } = inputs;
    let AttentionShape { batch, query_heads, kv_heads, queries, keys, head_dim } = shape;
    let group = query_heads / kv_heads;
    let scale = T::from_f32(scale).to_f32();
    for b in 0..batch {
        for h in 0..query_heads {
            let g = h / group;
            let token = |row: usize, heads: usize, head: usize| (row * heads + head) * head_dim;
            // q' = T(T(scale) · q), this head's [Lq, D].
            let scaled: Vec<T> = (0..queries * head_dim)
                .map(|x| {
                    let value = q[token(b * queries + x / head_dim, query_heads, h) + x % head_dim];
                    T::from_f32(scale * value.to_f32())
                })
                .collect();
            let start = token(b * keys, kv_heads, g);
            let k_view = MatRef::strided(k.get(start..).unwrap_or(&[]), keys, head_dim, kv_heads * head_dim, 1)?;
            let v_view = MatRef::strided(v.get(start..).unwrap_or(&[]), keys, head_dim, kv_heads * head_dim, 1)?;
            let mut scores = vec![T::default(); queries * keys];
            let q_view = MatRef::row_major(&scaled, queries, head_dim)?;
            gemm::reference(q_view, k_view.t(), &mut scores, &GemmOptions::default())?;
            if let Some(mask) = mask.as_ref().filter(|_| keys > 0) {
                for (i, row) in scores.chunks_exact_mut(keys).enumerate() {
                    for (s, m) in row.iter_mut().zip(mask.row(&shape, b, h, i)) {
                        *s = T::from_f32(s.to_f32() + m.to_f32());
                    }
                }
            }
            if keys > 0 {
                for row in scores.chunks_exact_mut(keys) {
                    softmax_row(row);
                }
            }
            let mut head = vec![T::default(); queries * head_dim];
            let p_view = MatRef::row_major(&scores, queries, keys)?;
            gemm::reference(p_view, v_view, &mut head, &GemmOptions::default())?;
            for (i, row) in head.chunks_exact(head_dim).enumerate() {
                let start = token(b * queries + i, query_heads, h);
                out[start..start + head_dim].copy_from_slice(row);
            }
        }
    }
    Ok(())
}

/// MLX's CPU `softmax(row, precise = true)` (`softmax<T, AccT = float>`, simd width 1), in
/// place: the maximum (`maximum(x, m)`: a NaN `x` is taken, else the larger, the earlier on
/// ties), the exponentials and their sequential sum, `1 / sum`, then for float32 the stored
/// exponential times it, for bf16 the exponential recomputed times it, rounded.
pub(crate) fn softmax_row<T: Float>(row: &mut [T]) {
    let mut maximum = f32::NEG_INFINITY;
    for x in row.iter() {
        let x = x.to_f32();
        maximum = if x.is_nan() || x > maximum { x } else { maximum };
    }
    let mut normalizer = 0.0f32;
    let mut stored = Vec::with_capacity(if T::DTYPE == ElementType::F32 { row.len() } else { 0 });
    for x in row.iter() {
        let e = exp(x.to_f32() - maximum);
        if T::DTYPE == ElementType::F32 {
            stored.push(e);
        }
        normalizer += e;
    }
    let normalizer = 1.0 / normalizer;
    for (i, x) in row.iter_mut().enumerate() {
        *x = match T::DTYPE {
            ElementType::F32 => T::from_f32(stored[i] * normalizer),
            ElementType::Bf16 => T::from_f32(exp(x.to_f32() - maximum) * normalizer),
        };
    }
}
