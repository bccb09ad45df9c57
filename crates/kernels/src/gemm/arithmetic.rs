//! The scalar rules every GEMM path shares: the operand casts (after MLX's `clip`,
//! [`clip_scalar`]), where MLX's CPU matmul adds the bias, the arithmetic of the k-sum
//! (float32, or bf16 at every step), and how one float32 step `acc + a·b` rounds
//! ([`MultiplyAdd`]: separately on x86-64, fused on aarch64, [`TargetMultiplyAdd`]).

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

/// How one float32 multiply-add step `acc + a·b` of MLX's CPU arithmetic rounds: the rule of
/// the stock `mlx-cpu` wheel's reference BLAS (`sgemm_`) and `libmlx` (`_qmm_t`, `fp_qmm_t`)
/// for a target. Every float32 k-sum of this crate (the matrix products, the quantized ones,
/// the attention's two products, the dequantized weights `scale·q + bias`) takes its steps
/// through one rule: [`TargetMultiplyAdd`] in the kernels, either rule in tests.
pub trait MultiplyAdd: Copy + Send + Sync + 'static {
    /// `acc + a·b` in float32 under this rule.
    fn mul_add(a: f32, b: f32, acc: f32) -> f32;
}

/// `round(acc + round(a·b))`: the product rounded to float32, then the sum. The x86-64 wheel's
/// rule (its BLAS and `libmlx` are compiled without FMA).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Separate;

/// `round(acc + a·b)`, one rounding (`f32::mul_add`, an `fmadd`). The aarch64 Linux wheel's
/// rule: its `sgemm_` k-loops (`C(i,j) += TEMP·A(i,l)`; `TEMP += A(l,i)·B(l,j)`), `_qmm_t`'s
/// `sum += x·(scale·q + bias)` and `fp_qmm_t`'s `gsum += x·w`, `sum += scale·gsum` are each
/// compiled to `fmadd` (GCC's default contraction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fused;

impl MultiplyAdd for Separate {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, acc: f32) -> f32 {
        let product = a * b;
        acc + product
    }
}

impl MultiplyAdd for Fused {
    #[inline(always)]
    fn mul_add(a: f32, b: f32, acc: f32) -> f32 {
        a.mul_add(b, acc)
    }
}

/// The [`MultiplyAdd`] rule of the stock MLX wheel for the target this crate is compiled
/// for: [`Fused`] on aarch64, [`Separate`] elsewhere (x86-64; the x86 SIMD kernels implement
/// [`Separate`] only, and exist only there).
#[cfg(target_arch = "aarch64")]
pub type TargetMultiplyAdd = Fused;

/// The [`MultiplyAdd`] rule of the stock MLX wheel for the target this crate is compiled
/// for: [`Fused`] on aarch64, [`Separate`] elsewhere (x86-64; the x86 SIMD kernels implement
/// [`Separate`] only, and exist only there).
#[cfg(not(target_arch = "aarch64"))]
pub type TargetMultiplyAdd = Separate;

/// `c + a·b` in `T`'s arithmetic under rule `R`: float32 takes `R`'s step; bf16 rounds the
/// product and the sum to bf16 each (`bfloat16_t`'s operators, which no compiler fuses).
#[inline(always)]
pub(crate) fn multiply_add<T: Float, R: MultiplyAdd>(a: T, b: T, c: T) -> T {
    match T::DTYPE {
        ElementType::F32 => T::from_f32(R::mul_add(a.to_f32(), b.to_f32(), c.to_f32())),
        ElementType::Bf16 => {
            let product = T::from_f32(a.to_f32() * b.to_f32());
            T::from_f32(c.to_f32() + product.to_f32())
        }
    }
}

/// The arithmetic of a product's k-sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arithmetic {
    /// `acc = acc + a·b` in float32, each step under [`TargetMultiplyAdd`]: MLX's float32
    /// matmul, and its bf16 one (an `f32` accumulator rounded to bf16 once, at the store; its
    /// products of bf16 values are exact, so both rules agree there).
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
