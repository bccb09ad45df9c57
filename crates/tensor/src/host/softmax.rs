//! Row-wise softmax in place.

use super::exp::exp_scalar;
use super::parallel::for_row_chunks;
use crate::{Error, Result};

/// Replaces each row `x` (`row_len` values; `data.len()` a multiple of it) with
/// `softmax(scale · x + mask_row)`, where `mask`, if given, holds `mask_rows` rows of
/// `row_len` additive values and row `r` uses mask row `r % mask_rows`. Accumulates in
/// float32 after subtracting the row maximum. Rows are spread over the cores.
///
/// Fails with [`Error::Shape`] (touching nothing) when `data` is not a whole number of rows or
/// the mask holds fewer than `mask_rows` rows (or none).
pub fn softmax_rows(data: &mut [f32], row_len: usize, scale: f32, mask: Option<(&[f32], usize)>) -> Result<()> {
    let shape = |detail: String| Error::Shape { op: "softmax_rows", detail };
    if row_len == 0 || !data.len().is_multiple_of(row_len) {
        return Err(shape(format!("{} values are not rows of {row_len}", data.len())));
    }
    if let Some((mask, mask_rows)) = mask
        && (mask_rows == 0 || mask_rows.checked_mul(row_len).is_none_or(|n| mask.len() < n))
    {
        return Err(shape(format!("a mask of {} values does not hold {mask_rows} rows of {row_len}", mask.len())));
    }
    for_row_chunks(data, row_len, |chunk, first_row| {
        for (i, row) in chunk.chunks_exact_mut(row_len).enumerate() {
            let mask_row = mask.map(|(mask, mask_rows)| {
                let r = (first_row + i) % mask_rows;
                &mask[r * row_len..(r + 1) * row_len]
            });
            let inv = 1.0 / exp_shifted_row(row, scale, mask_row);
            row.iter_mut().for_each(|v| *v *= inv);
        }
    });
    Ok(())
}

/// Replaces `row` with `e^{y − max(y)}` for `y = scale · row + mask` (the maximum taken as 0
/// when it is not finite) and returns the sum of the new values: a softmax row before its
/// normalisation. `mask`, if given, must be as long as `row` (extra values are ignored).
pub(crate) fn exp_shifted_row(row: &mut [f32], scale: f32, mask: Option<&[f32]>) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { avx2::exp_shifted_row(row, scale, mask) };
    }
    exp_shifted_row_portable(row, scale, mask)
}

/// [`exp_shifted_row`] one value at a time.
fn exp_shifted_row_portable(row: &mut [f32], scale: f32, mask: Option<&[f32]>) -> f32 {
    match mask {
        Some(mask) => row.iter_mut().zip(mask).for_each(|(v, m)| *v = *v * scale + m),
        None => row.iter_mut().for_each(|v| *v *= scale),
    }
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let shift = if max.is_finite() { max } else { 0.0 };
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = exp_scalar(*v - shift);
        sum += *v;
    }
    sum
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::super::exp::avx2::exp8_nonpositive;
    use super::super::exp::exp_scalar;
    use std::arch::x86_64::*;

    /// Horizontal reduction of 8 lanes with `op`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn reduce(v: __m256, op: impl Fn(__m128, __m128) -> __m128) -> f32 {
        let quad = op(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let pair = op(quad, _mm_movehl_ps(quad, quad));
        _mm_cvtss_f32(op(pair, _mm_movehdup_ps(pair)))
    }

    /// `y = scale · row + mask` at `i..i + 8` (one rounding with a mask), the same in both passes.
    ///
    /// # Safety
    /// `i + 8 <= row.len()`, and `mask`, if given, is as long as `row`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn scaled8(row: &[f32], mask: Option<&[f32]>, i: usize, scale: __m256) -> __m256 {
        // SAFETY: `i + 8` values are readable in `row` and `mask` (the caller's contract).
        unsafe {
            let x = _mm256_loadu_ps(row.as_ptr().add(i));
            match mask {
                Some(mask) => _mm256_fmadd_ps(x, scale, _mm256_loadu_ps(mask.as_ptr().add(i))),
                None => _mm256_mul_ps(x, scale),
            }
        }
    }

    /// [`super::exp_shifted_row`] with 8 lanes at a time: a first pass finds the maximum
    /// without writing, the second writes the exponentials. A row whose maximum is not finite
    /// (every key masked with −∞, or an infinite score) or that holds a NaN takes the portable
    /// path, which propagates the NaN.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn exp_shifted_row(row: &mut [f32], scale: f32, mask: Option<&[f32]>) -> f32 {
        let n = row.len();
        let lanes = n - n % 8;
        let mask = mask.map(|mask| &mask[..n]);
        let vscale = _mm256_set1_ps(scale);
        let tail = |row: &[f32], i: usize| match mask {
            Some(mask) => row[i] * scale + mask[i],
            None => row[i] * scale,
        };
        let (mut vmax, mut unordered) = (_mm256_set1_ps(f32::NEG_INFINITY), _mm256_setzero_ps());
        for i in (0..lanes).step_by(8) {
            // SAFETY: `i + 8 <= n`; `mask` is sliced to `n`.
            let y = unsafe { scaled8(row, mask, i, vscale) };
            vmax = _mm256_max_ps(vmax, y);
            unordered = _mm256_or_ps(unordered, _mm256_cmp_ps::<_CMP_UNORD_Q>(y, y));
        }
        let (mut max, mut has_nan) = (reduce(vmax, |a, b| _mm_max_ps(a, b)), _mm256_movemask_ps(unordered) != 0);
        for i in lanes..n {
            let y = tail(row, i);
            max = max.max(y);
            has_nan |= y.is_nan();
        }
        if !max.is_finite() || has_nan {
            return super::exp_shifted_row_portable(row, scale, mask);
        }
        // Every `y − max` is now ≤ 0 (or −∞).
        let vmax = _mm256_set1_ps(max);
        let mut vsum = _mm256_setzero_ps();
        for i in (0..lanes).step_by(8) {
            // SAFETY: as in the first pass; the store writes the 8 values just read.
            unsafe {
                let e = exp8_nonpositive(_mm256_sub_ps(scaled8(row, mask, i, vscale), vmax));
                _mm256_storeu_ps(row.as_mut_ptr().add(i), e);
                vsum = _mm256_add_ps(vsum, e);
            }
        }
        let mut sum = reduce(vsum, |a, b| _mm_add_ps(a, b));
        for i in lanes..n {
            let e = exp_scalar(tail(row, i) - max);
            row[i] = e;
            sum += e;
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector path against the one-value-at-a-time path on rows with a remainder: the same
    /// values bit for bit without a mask (the same arithmetic), sums equal to rounding.
    #[test]
    fn the_vector_path_matches_the_portable_one() {
        for len in [1usize, 8, 37, 203] {
            let row: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin() * 30.0).collect();
            let (mut fast, mut portable) = (row.clone(), row.clone());
            let (sum_fast, sum_portable) =
                (exp_shifted_row(&mut fast, 0.8, None), exp_shifted_row_portable(&mut portable, 0.8, None));
            assert_eq!(fast, portable, "length {len}");
            assert!(
                (sum_fast - sum_portable).abs() <= 1e-6 * sum_portable,
                "length {len}: {sum_fast} vs {sum_portable}"
            );
            let mask: Vec<f32> =
                (0..len).map(|i| if i % 5 == 1 { f32::NEG_INFINITY } else { i as f32 * 0.01 }).collect();
            let (mut fast, mut portable) = (row.clone(), row.clone());
            let (sum_fast, sum_portable) = (
                exp_shifted_row(&mut fast, 0.8, Some(&mask)),
                exp_shifted_row_portable(&mut portable, 0.8, Some(&mask)),
            );
            // The vector lanes add the mask in one rounding (a fused multiply-add), the portable
            // path in two: scores near 30 then differ by an ulp (2e-6) before the exponential.
            for (i, (f, p)) in fast.iter().zip(&portable).enumerate() {
                assert!((f - p).abs() <= 1e-5 * p, "length {len}, masked, value {i}: {f} vs {p}");
            }
            assert!((sum_fast - sum_portable).abs() <= 1e-5 * sum_portable, "length {len}, masked");
        }
        // Rows without a finite maximum take the portable path whole: every key hidden (all 0,
        // summing to 0: the softmax is then 0 / 0), or an infinite score.
        let hidden = vec![f32::NEG_INFINITY; 19];
        let mut row = vec![1.5f32; 19];
        assert_eq!(exp_shifted_row(&mut row, 1.0, Some(&hidden)), 0.0);
        assert!(row.iter().all(|&v| v == 0.0), "{row:?}");
        let mut row: Vec<f32> = (0..19).map(|i| i as f32).collect();
        row[11] = f32::INFINITY;
        let mut portable = row.clone();
        let sum = exp_shifted_row(&mut row, 1.0, None);
        assert_eq!(sum, exp_shifted_row_portable(&mut portable, 1.0, None));
        let bits = |values: &[f32]| values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&row), bits(&portable));
        // A NaN score, in the vector lanes or the remainder, reaches the sum and its own place.
        for at in [3, 17] {
            let mut row: Vec<f32> = (0..19).map(|i| i as f32 * 0.1).collect();
            row[at] = f32::NAN;
            assert!(exp_shifted_row(&mut row, 1.0, None).is_nan(), "NaN at {at}");
            assert!(row[at].is_nan() && row[0].is_finite(), "NaN at {at}: {row:?}");
        }
    }

    #[test]
    fn rows_sum_to_one_and_follow_the_mask() {
        let mut data: Vec<f32> = (0..3 * 5).map(|i| (i as f32 * 0.7).sin() * 4.0).collect();
        let original = data.clone();
        let mask = [0.0, 0.0, -1e4, 0.0, -1e4];
        softmax_rows(&mut data, 5, 2.0, Some((&mask, 1))).unwrap();
        for (r, row) in data.chunks(5).enumerate() {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
            assert_eq!(row[2], 0.0);
            assert_eq!(row[4], 0.0);
            let x: Vec<f64> = (0..5).map(|c| 2.0 * original[r * 5 + c] as f64 + mask[c] as f64).collect();
            let max = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let denom: f64 = x.iter().map(|v| (v - max).exp()).sum();
            for c in 0..5 {
                let expected = (x[c] - max).exp() / denom;
                assert!((row[c] as f64 - expected).abs() < 1e-6, "row {r} col {c}");
            }
        }
        // Rows long enough for the vector lanes (and a remainder), with a per-row mask.
        let row_len = 37;
        let mut long: Vec<f32> = (0..2 * row_len).map(|i| (i as f32 * 1.3).cos() * 9.0).collect();
        let long_mask: Vec<f32> = (0..2 * row_len).map(|i| if i % 7 == 3 { -1e9 } else { 0.1 * i as f32 }).collect();
        let before = long.clone();
        softmax_rows(&mut long, row_len, 0.5, Some((&long_mask, 2))).unwrap();
        for r in 0..2 {
            let x: Vec<f64> =
                (r * row_len..(r + 1) * row_len).map(|i| 0.5 * before[i] as f64 + long_mask[i] as f64).collect();
            let max = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let denom: f64 = x.iter().map(|v| (v - max).exp()).sum();
            for c in 0..row_len {
                let expected = (x[c] - max).exp() / denom;
                assert!((long[r * row_len + c] as f64 - expected).abs() < 1e-6, "long row {r} col {c}");
            }
        }
        for (row_len, mask) in [(0, None), (4, None), (5, Some((&mask[..4], 1))), (5, Some((&mask[..], 0)))] {
            let before = data.clone();
            assert!(matches!(softmax_rows(&mut data, row_len, 1.0, mask), Err(Error::Shape { .. })));
            assert_eq!(data, before);
        }
    }
}
