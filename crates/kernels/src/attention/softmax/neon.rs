//! The softmax steps of [`Lanes`](super::Lanes) with NEON (aarch64): four vectors of 4 lanes per
//! key, the same bits as the portable loops.

use super::NR;
use crate::exp::neon::{exp4, exp4_nonpositive};
use crate::gemm::magnitudes::Magnitudes;
use crate::lanes_neon::{maximum, round4};
use crate::{ElementType, Float};
use std::arch::aarch64::*;

/// Vectors per key.
const Q: usize = NR / 4;

/// Loads the 16 lanes of `row`.
#[inline]
#[target_feature(enable = "neon")]
fn load(row: &[f32]) -> [float32x4_t; Q] {
    let row = &row[..NR];
    // SAFETY: `row` holds 16 floats.
    std::array::from_fn(|q| unsafe { vld1q_f32(row.as_ptr().add(4 * q)) })
}

/// Stores 16 lanes into `row`.
#[inline]
#[target_feature(enable = "neon")]
fn store(row: &mut [f32], lanes: [float32x4_t; Q]) {
    let row = &mut row[..NR];
    for (q, v) in lanes.into_iter().enumerate() {
        // SAFETY: `row` holds 16 floats.
        unsafe { vst1q_f32(row.as_mut_ptr().add(4 * q), v) };
    }
}

crate::cpu::target_entry! {
    Neon;
    /// [`scores_tf`] behind the token that proves its target features.
    pub(super) fn scores[T: Float](
        rows: &mut [f32],
        mask: Option<&[f32]>,
        maximum_lanes: &mut [f32; NR],
    ) = scores_tf;
}

#[target_feature(enable = "neon")]
fn scores_tf<T: Float>(rows: &mut [f32], mask: Option<&[f32]>, maximum_lanes: &mut [f32; NR]) {
    let mut m = load(maximum_lanes);
    for (j, row) in rows.chunks_exact_mut(NR).enumerate() {
        let mut x = load(row);
        let add = mask.map(|mask| load(&mask[j * NR..]));
        for q in 0..Q {
            x[q] = round4::<T>(x[q]);
            if let Some(add) = add {
                x[q] = round4::<T>(vaddq_f32(x[q], add[q]));
            }
            m[q] = maximum(x[q], m[q]);
        }
        store(row, x);
    }
    store(maximum_lanes, m);
}

/// Whether all 4 lanes are finite.
#[inline]
#[target_feature(enable = "neon")]
fn finite(x: float32x4_t) -> bool {
    vminvq_u32(vcltq_f32(vabsq_f32(x), vdupq_n_f32(f32::INFINITY))) != 0
}

crate::cpu::target_entry! {
    Neon;
    /// [`exponentials_tf`] behind the token that proves its target features.
    pub(super) fn exponentials(scores: &mut [f32], maximum: &[f32; NR]) -> [f32; NR] = exponentials_tf;
}

#[target_feature(enable = "neon")]
fn exponentials_tf(scores: &mut [f32], maximum: &[f32; NR]) -> [f32; NR] {
    let m = load(maximum);
    // Where a lane's maximum is finite, no score of it is NaN (a NaN would be the maximum)
    // and none exceeds it: every `s − m` is `≤ 0` or `−∞`.
    let mut bounded = [false; Q];
    for q in 0..Q {
        bounded[q] = finite(m[q]);
    }
    let mut sum = [vdupq_n_f32(0.0); Q];
    for row in scores.chunks_exact_mut(NR) {
        let mut e = load(row);
        for q in 0..Q {
            let x = vsubq_f32(e[q], m[q]);
            e[q] = if bounded[q] { exp4_nonpositive(x) } else { exp4(x) };
            sum[q] = vaddq_f32(sum[q], e[q]);
        }
        store(row, e);
    }
    let mut out = [0.0f32; NR];
    store(&mut out, sum);
    out
}

crate::cpu::target_entry! {
    Neon;
    /// [`normalize_tf`] behind the token that proves its target features.
    pub(super) fn normalize[T: Float](rows: &mut [f32], inverse: &[f32; NR]) -> Magnitudes = normalize_tf;
}

#[target_feature(enable = "neon")]
fn normalize_tf<T: Float>(rows: &mut [f32], inverse: &[f32; NR]) -> Magnitudes {
    let inv = load(inverse);
    let bounded = T::DTYPE == ElementType::Bf16;
    // The smallest nonzero finite `p`, as the AVX2 lanes find it: `bits − 1` as unsigned
    // puts the zeros last and the NaNs above `+∞`.
    let one = vdupq_n_u32(1);
    let mut least = vdupq_n_u32(u32::MAX);
    for row in rows.chunks_exact_mut(NR) {
        let mut p = load(row);
        for q in 0..Q {
            p[q] = round4::<T>(vmulq_f32(p[q], inv[q]));
            if bounded {
                least = vminq_u32(least, vsubq_u32(vreinterpretq_u32_f32(p[q]), one));
            }
        }
        store(row, p);
    }
    if !bounded {
        return Magnitudes::UNBOUNDED;
    }
    let least = vminvq_u32(least).wrapping_add(1);
    let min = if least < f32::INFINITY.to_bits() { f32::from_bits(least) } else { f32::INFINITY };
    Magnitudes { max: 1.0, min }
}
