//! Helpers for testing and measuring the kernels, shared by this crate's tests, benches and
//! examples and by the tests in `layers` that hold the kernels against MLX (both take them as
//! a dev-dependency with the `testing` feature). Not part of the kernels' API.
//!
//! - Comparisons under the kernels' NaN contract: [`bits`], [`same_bits`], [`same_as_mlx`].
//! - Inputs: [`cast`], [`lcg_values`], [`tower_mask`], [`norm_specials`].
//! - proptest strategies: values ([`floats`], [`scaled_floats`]) and whole random cases of
//!   a product ([`gemm`]), of a quantized product ([`quantized`]) and of an attention
//!   ([`attention`]).
#![allow(clippy::expect_used, reason = "test helpers: a misuse is a failed test")]

pub mod attention;
pub mod gemm;
pub mod quantized;

use crate::{ElementType, Float};
use proptest::prelude::*;
use std::ops::Range;

/// The bits of each value (as `f32`), every NaN as one value (`u32::MAX`): which NaN a row
/// holding several, or an operation on two, yields is not part of the kernels' contract.
pub fn bits<T: Float>(values: &[T]) -> Vec<u32> {
    values.iter().map(|x| if x.to_f32().is_nan() { u32::MAX } else { x.to_f32().to_bits() }).collect()
}

/// Bits equal, or both NaN (of any payload and sign).
pub fn same_bits<T: Float>(x: T, y: T) -> bool {
    let (x, y) = (x.to_f32(), y.to_f32());
    (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
}

/// A kernel's output against MLX's as the kernels promise it: float32 bits equal or both NaN
/// (a NaN's payload and sign are not part of the contract), bf16 bits equal (MLX's NaNs are
/// `0x7FC0`, as the kernels').
pub fn same_as_mlx<T: Float>(ours: T, mlx: T) -> bool {
    match T::DTYPE {
        ElementType::F32 => same_bits(ours, mlx),
        ElementType::Bf16 => ours.to_f32().to_bits() == mlx.to_f32().to_bits(),
    }
}

/// `values` in `T`, converted as MLX converts them ([`Float::from_f32`]).
pub fn cast<T: Float>(values: &[f32]) -> Vec<T> {
    values.iter().map(|&x| T::from_f32(x)).collect()
}

/// `len` pseudo-random values in `[-scale, scale)` from a fixed LCG started at `seed`, in `T`.
pub fn lcg_values<T: Float>(len: usize, seed: u64, scale: f32) -> Vec<T> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            T::from_f32((((state >> 40) as f32 / (1u64 << 23) as f32) - 1.0) * scale)
        })
        .collect()
}

/// gemma4's tower mask for one image of `tokens` tokens, `[tokens, tokens]` in `T`: 0 among
/// the first `real` (the patches), `-1e4` to and from the others (the padding).
pub fn tower_mask<T: Float>(tokens: usize, real: usize) -> Vec<T> {
    (0..tokens * tokens).map(|x| T::from_f32(if x / tokens < real && x % tokens < real { 0.0 } else { -1e4 })).collect()
}

/// Values that stress a norm's sum of squares: ±0, NaN, ±inf, denormals of both signs, the
/// smallest normal, a value whose square underflows and ones whose squares overflow. Twelve, a
/// row's worth in the tests.
pub fn norm_specials() -> Vec<f32> {
    vec![
        0.0,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(1),
        f32::from_bits(0x8000_0001),
        f32::MIN_POSITIVE,
        1e-30,
        -3e19,
        1e38,
        f32::MAX,
    ]
}

/// Values of `ordinary.1` (weight `ordinary.0`), else any bit pattern (weight 1: NaNs of
/// every payload, infinities, denormals, huge and tiny magnitudes) or one of `specials`
/// (weight 1).
pub fn floats(ordinary: (u32, Range<f32>), specials: Vec<f32>) -> impl Strategy<Value = f32> + Clone {
    prop_oneof![
        ordinary.0 => ordinary.1,
        1 => any::<u32>().prop_map(f32::from_bits),
        1 => prop::sample::select(specials),
    ]
}

/// Values of `ordinary.1` (weight `ordinary.0`), else `m · 2^e` with `m` in `(−1, 1)` and `e`
/// in `scaled.1` (weight `scaled.0`), or one of `specials` (weight 1).
pub fn scaled_floats(
    ordinary: (u32, Range<f32>),
    scaled: (u32, Range<i32>),
    specials: Vec<f32>,
) -> impl Strategy<Value = f32> + Clone {
    prop_oneof![
        ordinary.0 => ordinary.1,
        scaled.0 => (scaled.1, -1.0f32..1.0).prop_map(|(e, m)| m * 2f32.powi(e)),
        1 => prop::sample::select(specials),
    ]
}
