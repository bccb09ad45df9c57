//! The scalar rules every GEMM path shares: the operand casts (after MLX's `clip`,
//! [`clip_scalar`]), where MLX's CPU matmul adds the bias, and the arithmetic of the k-sum
//! (float32, or bf16 at every step).

use super::matrix::{MatRef, MlxLayout};
use crate::elementwise::clip_scalar;
use crate::{ElementType, Float};

/// An element of an operand as the product reads it: clipped in its own dtype (when asked),
/// then cast to the output dtype `O` as MLX's matmul casts both operands to the result dtype,
/// then widened to `f32` exactly.
#[inline(always)]
pub(crate) fn operand<T: Float, O: Float>(x: T, clip: Option<(f32, f32)>) -> f32 {
    let x = match clip {
        Some((lo, hi)) => clip_scalar(x.to_f32(), Some(lo), Some(hi)),
        None => x.to_f32(),
    };
    O::from_f32(x).to_f32()
}

/// Where MLX's CPU matmul puts `addmm`'s addend `c` (α = β = 1) relative to the k-sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BiasPlacement {
    /// The accumulator starts at 0 and `c` is added once after the full sum:
    /// `round(acc + c)`. bf16 (`simd_gemm`: `alpha·acc + beta·c`), and float32 when `b` is
    /// column-contiguous (the reference BLAS's `TRANSA = 'T'` loop: `C = ALPHA·TEMP + BETA·C`).
    AfterSum,
    /// The accumulator starts at `c` and every product is added to it: float32 when `b` is
    /// row-contiguous or strided (the reference BLAS's `TRANSA = 'N'` loop accumulates into `C`).
    BeforeSum,
}

impl BiasPlacement {
    /// The placement MLX 0.32's CPU matmul uses for output dtype `O` and right operand `b`.
    pub(crate) fn for_product<O: Float, B: Float>(b: &MatRef<'_, B>) -> BiasPlacement {
        match (O::DTYPE, b.mlx_layout()) {
            (ElementType::F32, MlxLayout::RowContiguous | MlxLayout::Strided) => BiasPlacement::BeforeSum,
            _ => BiasPlacement::AfterSum,
        }
    }
}

/// The arithmetic of a product's k-sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arithmetic {
    /// `acc = acc + fl(a·b)` in float32: MLX's float32 matmul, and its bf16 one (an `f32`
    /// accumulator rounded to bf16 once, at the store).
    F32,
    /// `acc = bf16(acc + bf16(a·b))`: every product and every sum rounded to bf16, as MLX's
    /// scalar loops over `bfloat16_t` compute (each operator converts to float, computes, and
    /// rounds back). Operands and accumulators hold bf16 values.
    Bf16,
}

/// `x` rounded to bf16 as [`bf16_from_f32`](crate::bf16_from_f32) rounds (to nearest, ties to
/// even), as an `f32`, for any `x` that is not a NaN; a NaN whose low 16 bits are zero comes
/// back unchanged. The [`Arithmetic::Bf16`] kernels only meet such NaNs (widened from bf16, or
/// made by arithmetic on such values, which keeps an operand's payload or makes the default
/// NaN), so they need no NaN test; the store makes every NaN `0x7FC0`.
#[inline(always)]
pub(crate) fn round_bf16(x: f32) -> f32 {
    let u = x.to_bits();
    f32::from_bits(u.wrapping_add(0x7FFF + ((u >> 16) & 1)) & 0xFFFF_0000)
}
