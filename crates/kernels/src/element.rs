//! [`Float`]: the element types the kernels read and write, converted as MLX converts them.

use half::bf16;
use std::any::TypeId;
use std::fmt;

/// Which [`Float`] a kernel computes on: `f32` or `bf16`, the element types of the kernels'
/// slices. Not `tensor::Dtype` (an MLX array's dtype, of which these are two): the kernels know
/// nothing of MLX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementType {
    F32,
    Bf16,
}

/// An element type of the kernels: `f32`, or `bf16` with MLX's conversions.
///
/// Widening to `f32` is exact for both. Narrowing is MLX's `static_cast<T>(float)`: for bf16,
/// [`bf16_from_f32`] (round to nearest even; every NaN becomes `0x7FC0`), which differs from
/// `half::bf16::from_f32` on NaNs.
pub trait Float: Copy + Default + PartialEq + Send + Sync + fmt::Debug + 'static {
    const DTYPE: ElementType;
    /// The exact `f32` value.
    fn to_f32(self) -> f32;
    /// MLX's conversion from `f32`.
    fn from_f32(x: f32) -> Self;
}

impl Float for f32 {
    const DTYPE: ElementType = ElementType::F32;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(x: f32) -> f32 {
        x
    }
}

impl Float for bf16 {
    const DTYPE: ElementType = ElementType::Bf16;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.to_bits()) << 16)
    }
    #[inline(always)]
    fn from_f32(x: f32) -> bf16 {
        bf16_from_f32(x)
    }
}

/// MLX's `_MLX_BFloat16(float)` (`mlx/types/bf16.h`): a NaN becomes the positive quiet NaN
/// `0x7FC0`; anything else rounds to nearest, ties to even, on the upper 16 bits (infinities
/// stay infinite, values past the largest bf16 round to infinity).
#[inline(always)]
pub fn bf16_from_f32(x: f32) -> bf16 {
    if x.is_nan() {
        return bf16::from_bits(0x7FC0);
    }
    let u = x.to_bits();
    let rounded = u.wrapping_add(((u >> 16) & 1) + 0x7FFF);
    bf16::from_bits((rounded >> 16) as u16)
}

/// Whether `T` is `U` (a compile-time constant after monomorphisation).
#[inline(always)]
pub(crate) fn is<T: 'static, U: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<U>()
}

/// Whether `T` is `f32` or `bf16`, the types whose bits the vector code (the lanes of
/// [`simd`](crate::simd)) moves without going through [`Float`]'s conversions.
#[inline(always)]
pub(crate) fn native<T: 'static>() -> bool {
    is::<T, f32>() || is::<T, bf16>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even_and_canonicalises_nan() {
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even 1.0.
        assert_eq!(bf16_from_f32(1.0 + 2f32.powi(-8)).to_bits(), 0x3F80);
        // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to the even 1 + 2^-6.
        assert_eq!(bf16_from_f32(1.0 + 3.0 * 2f32.powi(-8)).to_bits(), 0x3F82);
        assert_eq!(bf16_from_f32(-f32::NAN).to_bits(), 0x7FC0);
        assert_eq!(bf16_from_f32(f32::INFINITY).to_bits(), 0x7F80);
        assert_eq!(bf16_from_f32(f32::MAX).to_bits(), 0x7F80);
        assert_eq!(bf16_from_f32(-0.0).to_bits(), 0x8000);
        for bits in [0x0001u16, 0x3F80, 0x8001, 0x7F7F, 0xFF80] {
            let x = bf16::from_bits(bits);
            assert_eq!(bf16::from_f32(x.to_f32()).to_bits(), bits);
        }
    }
}
