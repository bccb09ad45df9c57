//! The masked softmax of a block of queries, one query per lane, down the keys: the scores
//! `sᵀ` (`Lk × NR`, key-major) become the probabilities `pᵀ` in place, each lane's
//! maximum, sum and scaling in key order as MLX's CPU softmax runs over one row.

use crate::Float;
use crate::exp::exp;
use crate::gemm::microkernel::NR;

/// Which code runs the lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lanes {
    /// AVX2 + FMA (the exponential's polynomial uses `fma`, as MLX's `std::fma`).
    Avx2,
    Portable,
}

impl Lanes {
    pub(crate) fn new(avx2: bool) -> Lanes {
        if avx2 && crate::cpu::has_avx2_fma() { Lanes::Avx2 } else { Lanes::Portable }
    }
}

/// `x` rounded to `T` and widened back.
#[inline(always)]
fn round<T: Float>(x: f32) -> f32 {
    T::from_f32(x).to_f32()
}

/// In place over `scores` (`Lk × NR`, the raw `f32` k-sums of `q'·kᵀ`): `s = T(acc)`, with a
/// mask (`Lk × NR`, values of `T`) `s = T(s + mask)`; then per lane `m = max s`,
/// `e = exp(s − m)`, `sum = Σ e` in key order, `p = T(e · (1 / sum))`.
pub(crate) fn softmax<T: Float>(lanes: Lanes, scores: &mut [f32], mask: Option<&[f32]>) {
    #[cfg(target_arch = "x86_64")]
    if lanes == Lanes::Avx2 && crate::cpu::has_avx2_fma() {
        // SAFETY: AVX2 and FMA are available (checked just above).
        unsafe { avx2::softmax::<T>(scores, mask) };
        return;
    }
    let _ = lanes;
    portable::<T>(scores, mask);
}

/// The lanes in plain Rust: the definition the AVX2 path matches.
fn portable<T: Float>(scores: &mut [f32], mask: Option<&[f32]>) {
    let mut maximum = [f32::NEG_INFINITY; NR];
    for (j, row) in scores.chunks_exact_mut(NR).enumerate() {
        let mask_row = mask.map(|mask| &mask[j * NR..(j + 1) * NR]);
        for (l, s) in row.iter_mut().enumerate() {
            let mut x = round::<T>(*s);
            if let Some(mask_row) = mask_row {
                x = round::<T>(x + mask_row[l]);
            }
            *s = x;
            maximum[l] = if x.is_nan() || x > maximum[l] { x } else { maximum[l] };
        }
    }
    let mut sum = [0.0f32; NR];
    for row in scores.chunks_exact_mut(NR) {
        for ((s, total), m) in row.iter_mut().zip(&mut sum).zip(&maximum) {
            let e = exp(*s - m);
            *total += e;
            *s = e;
        }
    }
    let inverse = sum.map(|total| 1.0 / total);
    for row in scores.chunks_exact_mut(NR) {
        for (s, inv) in row.iter_mut().zip(&inverse) {
            *s = round::<T>(*s * inv);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::NR;
    use crate::Float;
    use crate::exp::avx2::exp8;
    use crate::lanes::round8;
    use std::arch::x86_64::*;

    /// MLX's `maximum(x, m)` per lane: `x` if it is NaN or larger, else `m`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn maximum(x: __m256, m: __m256) -> __m256 {
        let take = _mm256_or_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(x, m), _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
        _mm256_blendv_ps(m, x, take)
    }

    /// [`super::portable`], two vectors of 8 lanes per key.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn softmax<T: Float>(scores: &mut [f32], mask: Option<&[f32]>) {
        const _: () = assert!(NR == 16);
        let keys = scores.len() / NR;
        let mut m = [_mm256_set1_ps(f32::NEG_INFINITY); 2];
        for j in 0..keys {
            let row = &mut scores[j * NR..(j + 1) * NR];
            for (half, m) in m.iter_mut().enumerate() {
                let at = &mut row[half * 8..half * 8 + 8];
                // SAFETY: `at` holds 8 floats.
                let mut x = round8::<T>(unsafe { _mm256_loadu_ps(at.as_ptr()) });
                if let Some(mask) = mask {
                    let add = &mask[j * NR + half * 8..j * NR + half * 8 + 8];
                    // SAFETY: `add` holds 8 floats.
                    x = round8::<T>(_mm256_add_ps(x, unsafe { _mm256_loadu_ps(add.as_ptr()) }));
                }
                // SAFETY: `at` holds 8 floats.
                unsafe { _mm256_storeu_ps(at.as_mut_ptr(), x) };
                *m = maximum(x, *m);
            }
        }
        let mut sum = [_mm256_setzero_ps(); 2];
        for row in scores.chunks_exact_mut(NR) {
            for (half, (total, m)) in sum.iter_mut().zip(&m).enumerate() {
                let at = &mut row[half * 8..half * 8 + 8];
                // SAFETY: `at` holds 8 floats.
                let e = exp8(_mm256_sub_ps(unsafe { _mm256_loadu_ps(at.as_ptr()) }, *m));
                *total = _mm256_add_ps(*total, e);
                // SAFETY: `at` holds 8 floats.
                unsafe { _mm256_storeu_ps(at.as_mut_ptr(), e) };
            }
        }
        let inverse = sum.map(|total| _mm256_div_ps(_mm256_set1_ps(1.0), total));
        for row in scores.chunks_exact_mut(NR) {
            for (half, inv) in inverse.iter().enumerate() {
                let at = &mut row[half * 8..half * 8 + 8];
                // SAFETY: `at` holds 8 floats.
                let p = round8::<T>(_mm256_mul_ps(unsafe { _mm256_loadu_ps(at.as_ptr()) }, *inv));
                // SAFETY: `at` holds 8 floats.
                unsafe { _mm256_storeu_ps(at.as_mut_ptr(), p) };
            }
        }
    }
}
