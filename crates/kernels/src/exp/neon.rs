//! [`exp`](super::exp) on 4 float32 lanes with NEON (aarch64): the operations of the AVX2 lanes
//! (`vrndmq_f32` the floor, `vfmaq_f32` the polynomial's `fma`), the same bits.

use super::{LIMIT, LOG2_E, POLY, exp};
use crate::lanes_neon::{from_array, is_nan, to_array};
use std::arch::aarch64::*;

/// [`exp`](super::exp) of each of 4 lanes, the same bits.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn exp4(x: float32x4_t) -> float32x4_t {
    let r = exp4_nonpositive(x);
    let r = vbslq_f32(is_nan(x), x, r);
    vbslq_f32(vcgtq_f32(x, vdupq_n_f32(LIMIT)), vdupq_n_f32(f32::INFINITY), r)
}

/// [`exp`](super::exp) of each of 4 lanes that are all `≤ 0` or `−∞` (no NaN), the same
/// bits: [`exp4`] without the NaN and overflow cases (the softmax's `exp(s − max)`).
///
/// `floor(y + 0.5)` (a double sum in MLX) is computed as the float32 `floor(y + 0.5f)`:
/// for `|y| < 2^23` the float32 sum is exact, or rounds without crossing an integer, except
/// at `y = 0.5 − 2⁻²⁵` (it rounds up to 1), which no float32 `x · 1.442695f` equals; for
/// `|y| ≥ 2^23` (`|x|` far above 88) the result is overridden by the limits.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn exp4_nonpositive(x: float32x4_t) -> float32x4_t {
    let y = vmulq_f32(x, vdupq_n_f32(LOG2_E));
    let n = vrndmq_f32(vaddq_f32(y, vdupq_n_f32(0.5)));
    let f = vsubq_f32(y, n);
    let mut p = vdupq_n_f32(POLY[0]);
    for &c in &POLY[1..] {
        // `c + p · f` rounded once: `fma(p, f, c)`.
        p = vfmaq_f32(vdupq_n_f32(c), p, f);
    }
    let biased = vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127));
    let two_to_n = vreinterpretq_f32_s32(vshlq_n_s32::<23>(biased));
    let r = vreinterpretq_u32_f32(vmulq_f32(two_to_n, p));
    vreinterpretq_f32_u32(vbicq_u32(r, vcltq_f32(x, vdupq_n_f32(-LIMIT))))
}

crate::cpu::target_entry! {
    Neon;
    /// [`exp_in_place_tf`] behind the token that proves its target features.
    pub(crate) fn exp_in_place(values: &mut [f32]) = exp_in_place_tf;
}

/// [`exp`](super::exp) of every element, 4 lanes at a time, the tail one by one.
#[target_feature(enable = "neon")]
fn exp_in_place_tf(values: &mut [f32]) {
    let (chunks, rest) = values.as_chunks_mut::<4>();
    for chunk in chunks {
        *chunk = to_array(exp4(from_array(chunk)));
    }
    for v in rest {
        *v = exp(*v);
    }
}

crate::cpu::target_entry! {
    Neon;
    /// [`lanes_tf`] behind the token that proves its target features.
    #[cfg(test)]
    pub(super) fn lanes(x: &[f32; 4]) -> ([f32; 4], [f32; 4]) = lanes_tf;
}

/// [`exp4`] and [`exp4_nonpositive`] of one array (for the tests).
#[cfg(test)]
#[target_feature(enable = "neon")]
fn lanes_tf(x: &[f32; 4]) -> ([f32; 4], [f32; 4]) {
    let v = from_array(x);
    (to_array(exp4(v)), to_array(exp4_nonpositive(v)))
}
