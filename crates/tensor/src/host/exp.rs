//! A vectorised float32 exponential (Cephes-style range reduction and polynomial; max relative
//! error ≈ 2e-7 on the float32 range, 0 below about −87.68, +∞ above 88.7).

/// Arguments are clamped to this: `2^n` for `n = round(x · log₂e)` is then at least `2^−127`,
/// whose float32 bits (`(n + 127) << 23`) are those of 0: e^x is 0 below about −87.68.
const MIN_ARG: f32 = -88.0;
const MAX_ARG: f32 = 88.722_83;
const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// `1.5 · 2^23 + 127`: `x · log₂e + SHIFTER` in one rounding is `SHIFTER + n` for the nearest
/// integer `n`, and its low mantissa bits hold `n + 127`, the biased exponent of `2^n`.
const SHIFTER: f32 = 12_583_039.0;
/// ln 2 split in a part exact in float32 and the rest, for an exact `x − n·ln2`.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
const P: [f32; 6] = [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5];

/// `e^x` for one value (the same arithmetic as the vector lanes).
#[inline(always)]
pub(crate) fn exp_scalar(x: f32) -> f32 {
    if x > MAX_ARG {
        return f32::INFINITY;
    }
    let x = if x < MIN_ARG { MIN_ARG } else { x }; // a NaN stays NaN
    let shifted = x.mul_add(LOG2_E, SHIFTER);
    let n = shifted - SHIFTER;
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, x));
    let mut p = P[0];
    for c in &P[1..] {
        p = p.mul_add(r, *c);
    }
    let poly = p.mul_add(r * r, r) + 1.0;
    poly * f32::from_bits(shifted.to_bits() << 23)
}

/// Replaces every value `x` of `values` with `e^x`.
pub fn exp_in_place(values: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        unsafe { avx2::exp_in_place(values) };
        return;
    }
    for v in values {
        *v = exp_scalar(*v);
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use super::*;
    use std::arch::x86_64::*;

    /// `e^x` of 8 lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn exp8(x: __m256) -> __m256 {
        let over = _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_set1_ps(MAX_ARG));
        let y = exp8_nonpositive(_mm256_min_ps(_mm256_set1_ps(MAX_ARG), x));
        _mm256_blendv_ps(y, _mm256_set1_ps(f32::INFINITY), over)
    }

    /// `e^x` of 8 lanes no greater than [`MAX_ARG`] (e.g. values shifted by their maximum),
    /// equal to [`exp8`] there; 0 below about −87.68 (−∞ included). A larger lane gives an
    /// unspecified value.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn exp8_nonpositive(x: __m256) -> __m256 {
        // `max` returns its second operand when either is NaN: a NaN lane stays NaN.
        let x = _mm256_max_ps(_mm256_set1_ps(MIN_ARG), x);
        let shifter = _mm256_set1_ps(SHIFTER);
        let shifted = _mm256_fmadd_ps(x, _mm256_set1_ps(LOG2_E), shifter);
        let n = _mm256_sub_ps(shifted, shifter);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_HI), x);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(LN2_LO), r);
        let mut p = _mm256_set1_ps(P[0]);
        for c in &P[1..] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(*c));
        }
        let poly = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0));
        let two_to_n = _mm256_slli_epi32::<23>(_mm256_castps_si256(shifted));
        _mm256_mul_ps(poly, _mm256_castsi256_ps(two_to_n))
    }

    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn exp_in_place(values: &mut [f32]) {
        let mut chunks = values.chunks_exact_mut(8);
        for chunk in &mut chunks {
            // SAFETY: `chunk` holds exactly 8 floats; unaligned loads and stores.
            unsafe {
                let x = _mm256_loadu_ps(chunk.as_ptr());
                _mm256_storeu_ps(chunk.as_mut_ptr(), exp8(x));
            }
        }
        for v in chunks.into_remainder() {
            *v = exp_scalar(*v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_libm_to_a_few_ulps() {
        let mut xs: Vec<f32> = (-8800..=8800).map(|i| i as f32 * 0.01).collect();
        xs.extend([-100.0, -87.0, 0.0, -0.0, 1e-30, 88.0, 100.0, f32::NEG_INFINITY]);
        let mut ys = xs.clone();
        exp_in_place(&mut ys);
        for (&x, &y) in xs.iter().zip(&ys) {
            let expected = (x as f64).exp();
            if expected < f32::MIN_POSITIVE as f64 {
                assert!(y == 0.0 || (y as f64 - expected).abs() < 1e-38, "exp({x}) = {y}");
            } else if expected > f32::MAX as f64 {
                assert_eq!(y, f32::INFINITY, "exp({x})");
            } else {
                let rel = ((y as f64 - expected) / expected).abs();
                assert!(rel < 4e-7, "exp({x}) = {y}, expected {expected}, relative error {rel}");
            }
            assert_eq!(y, exp_scalar(x), "vector and scalar lanes agree at {x}");
        }
        // NaN stays NaN, in the vector lanes and the remainder.
        let mut nans = [f32::NAN; 9];
        exp_in_place(&mut nans);
        assert!(nans.iter().all(|v| v.is_nan()), "{nans:?}");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_nonpositive_lanes_agree_with_the_general_ones() {
        use std::arch::x86_64::*;
        if !(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")) {
            return;
        }
        let mut xs: Vec<f32> = (-9000..=0).map(|i| i as f32 * 0.01).collect();
        xs.extend([-0.0, MIN_ARG, MIN_ARG - 1e-5, -87.0, -87.68, -87.69, -1e4, -f32::MAX, f32::NEG_INFINITY, -1e-30]);
        xs.resize(xs.len().next_multiple_of(8), -1.0);
        for lanes in xs.chunks_exact(8) {
            let (mut general, mut nonpositive) = ([0f32; 8], [0f32; 8]);
            // SAFETY: AVX2 and FMA are present (checked above); 8-float arrays.
            unsafe {
                let x = _mm256_loadu_ps(lanes.as_ptr());
                _mm256_storeu_ps(general.as_mut_ptr(), avx2::exp8(x));
                _mm256_storeu_ps(nonpositive.as_mut_ptr(), avx2::exp8_nonpositive(x));
            }
            assert_eq!(general.map(f32::to_bits), nonpositive.map(f32::to_bits), "at {lanes:?}");
            for (&x, &y) in lanes.iter().zip(&nonpositive) {
                assert!(x > -87.683 || y == 0.0, "e^{x} = {y} below the cut");
            }
        }
    }
}
