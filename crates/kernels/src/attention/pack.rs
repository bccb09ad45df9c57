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
use crate::cpu::Isa;
use crate::gemm::MatRef;
use crate::gemm::pack::pack_a;
use crate::gemm::tile::{MR, NR};

/// Packs `k` of batch row `b`, kv head `g` into `dst` (`⌈Lk / MR⌉ · D · MR` values): the
/// GEMM's packing of a left operand, the keys as its rows (`Lk ≥ 1`, `D ≥ 1`: the driver's
/// nonempty case).
pub(crate) fn pack_keys<T: Float>(isa: Isa, shape: &AttentionShape, k: &[T], b: usize, g: usize, dst: &mut [f32]) {
    let AttentionShape { keys, kv_heads, head_dim, .. } = *shape;
    let row_stride = kv_heads * head_dim;
    let start = (b * keys * kv_heads + g) * head_dim;
    let len = (keys - 1) * row_stride + head_dim;
    let rows = MatRef::rows_apart(&k[start..start + len], keys, head_dim, row_stride);
    pack_a::<T, T>(isa, &rows, None, (0, keys), (0, head_dim), dst);
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
/// query head `h` into `dst` (`D · NR` values); a full panel `LANES × LANES` at a time where
/// `isa` has vectors (the same values).
#[allow(clippy::too_many_arguments, reason = "the block's coordinates, each distinct")]
pub(crate) fn pack_queries<T: Float>(
    isa: Isa,
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
    let row = |lane: usize| {
        let start = ((b * queries + i0 + lane) * query_heads + h) * head_dim;
        &q[start..start + head_dim]
    };
    if count == NR {
        let rows: [&[T]; NR] = std::array::from_fn(row);
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512(avx512) => return avx512::scaled_columns(avx512, &rows, scale, dst),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(avx2) => return avx2::scaled_columns(avx2, &rows, scale, dst),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon(neon) => return neon::scaled_columns(neon, &rows, scale, dst),
            Isa::Portable => {}
        }
    } else {
        dst.fill(0.0);
    }
    for lane in 0..count {
        for (d, &x) in row(lane).iter().enumerate() {
            dst[d * NR + lane] = scaled::<T>(scale, x);
        }
    }
}

/// `T(scale · x)`, widened.
#[inline(always)]
fn scaled<T: Float>(scale: f32, x: T) -> f32 {
    T::from_f32(scale * x.to_f32()).to_f32()
}

crate::simd::stamp! {
    lanes v for Avx2, Avx512, Neon;

    /// `dst[d · NR + c] = T(scale · rows[c][d])` for every `d` (`dst` holds `D · NR` values):
    /// `LANES` rows × `LANES` dimensions per transpose, the dimensions past the last multiple
    /// of `LANES` one by one.
    entry fn scaled_columns[T: Float](rows: &[&[T]; NR], scale: f32, dst: &mut [f32]) {
        let dims = dst.len() / NR;
        let full = dims / v::LANES * v::LANES;
        let factor = v::splat(scale);
        for d0 in (0..full).step_by(v::LANES) {
            for group in 0..NR / v::LANES {
                let first = group * v::LANES;
                let lanes = std::array::from_fn(|c| v::round::<T>(v::mul(factor, v::load_at(rows[first + c], d0))));
                for (i, column) in v::transpose(lanes).into_iter().enumerate() {
                    v::store_at(dst, (d0 + i) * NR + first, column);
                }
            }
        }
        for d in full..dims {
            for (c, row) in rows.iter().enumerate() {
                dst[d * NR + c] = scaled::<T>(scale, row[d]);
            }
        }
    }
}
