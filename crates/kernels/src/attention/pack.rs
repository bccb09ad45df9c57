//! The operands of attention's two products as the GEMM micro-kernel's `f32` panels.
//!
//! - Scores, transposed (`sᵀ = k · q'ᵀ`, keys × queries): `k` of one (batch, kv head) as
//!   `⌈Lk / MR⌉` panels of `D × MR` (`panel[d · MR + r]` = key `MR·p + r`, dimension `d`), and
//!   a block of up to `NR` queries of `q'` as one panel of `D × NR` (`panel[d · NR + lane]`).
//! - Output, transposed (`outᵀ = vᵀ · pᵀ`, head dimensions × queries): `v` of one (batch, kv
//!   head) as `⌈D / MR⌉` panels of `Lk × MR` (`panel[j · MR + r]` = key `j`, dimension
//!   `MR·p + r`); the probabilities `pᵀ` (`Lk × NR`) are already that product's other panel.
//!
//! Missing keys, dimensions and queries of the last panel are zeros.

use super::AttentionShape;
use crate::Float;
use crate::gemm::tile::{MR, NR};

/// Packs `k` of batch row `b`, kv head `g` into `dst` (`⌈Lk / MR⌉ · D · MR` values).
pub(crate) fn pack_keys<T: Float>(shape: &AttentionShape, k: &[T], b: usize, g: usize, dst: &mut [f32]) {
    let AttentionShape { keys, kv_heads, head_dim, .. } = *shape;
    for (p, panel) in dst.chunks_exact_mut(head_dim * MR).enumerate() {
        let rows = MR.min(keys - p * MR);
        if rows < MR {
            panel.fill(0.0);
        }
        for r in 0..rows {
            let start = ((b * keys + p * MR + r) * kv_heads + g) * head_dim;
            for (d, &x) in k[start..start + head_dim].iter().enumerate() {
                panel[d * MR + r] = x.to_f32();
            }
        }
    }
}

/// Packs `v` of batch row `b`, kv head `g` into `dst` (`⌈D / MR⌉ · Lk · MR` values).
pub(crate) fn pack_values<T: Float>(shape: &AttentionShape, v: &[T], b: usize, g: usize, dst: &mut [f32]) {
    let AttentionShape { keys, kv_heads, head_dim, .. } = *shape;
    for (p, panel) in dst.chunks_exact_mut(keys * MR).enumerate() {
        let d0 = p * MR;
        let dims = MR.min(head_dim - d0);
        for (j, out) in panel.chunks_exact_mut(MR).enumerate() {
            let start = ((b * keys + j) * kv_heads + g) * head_dim + d0;
            for (o, &x) in out.iter_mut().zip(&v[start..start + dims]) {
                *o = x.to_f32();
            }
            out[dims..].fill(0.0);
        }
    }
}

/// Packs `q' = T(T(scale) · q)` of queries `i0..i0 + count` (`count ≤ NR`) of batch row `b`,
/// query head `h` into `dst` (`D · NR` values).
#[allow(clippy::too_many_arguments, reason = "the block's coordinates, each distinct")]
pub(crate) fn pack_queries<T: Float>(
    shape: &AttentionShape,
    q: &[T],
    scale: T,
    b: usize,
    h: usize,
    (i0, count): (usize, usize),
    dst: &mut [f32],
) {
    let AttentionShape { queries, query_heads, head_dim, .. } = *shape;
    let scale = scale.to_f32();
    if count < NR {
        dst.fill(0.0);
    }
    for lane in 0..count {
        let start = ((b * queries + i0 + lane) * query_heads + h) * head_dim;
        for (d, &x) in q[start..start + head_dim].iter().enumerate() {
            dst[d * NR + lane] = T::from_f32(scale * x.to_f32()).to_f32();
        }
    }
}
