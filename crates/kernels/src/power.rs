//! MLX's float32 `power` on the CPU: `std::pow(float, float)`, the C library's `powf`, and a
//! fast exact `power(x, 2)` for the norms that square with `power` rather than `square`.
//!
//! `powf(x, 2)` is not always `x * x`: glibc's `powf` rounds an approximation of `x²` (good
//! to about 2⁻³³ relative), not `x²` itself, so the two differ when `x²` lies that close to a
//! midpoint between floats (≈ 0.04 % of all float32). [`square_as_pow`] returns `x * x` where
//! `x²` is provably far from any midpoint and calls `powf` otherwise (≈ 1.5 % of values).

/// `powf(x, y)` from the C library, as MLX's `power` on float32 (and on bf16, through float)
/// calls it. The exponent passes through [`std::hint::black_box`] so that the compiler cannot
/// replace `powf(x, 2.0)` by `x * x`: the library's bits are the point.
#[inline]
pub fn pow(x: f32, y: f32) -> f32 {
    x.powf(std::hint::black_box(y))
}

/// Squares with `|x|` in `[2⁻⁴⁰, 2⁴⁰]` (or `x = ±0`) are checked; the others go to `powf`.
/// In this range `x·x − fl(x·x)` is exact in float32 and the threshold below is exact.
const SMALLEST: f32 = 1.0 / (1u64 << 40) as f32;
const LARGEST: f32 = (1u64 << 40) as f32;
/// `fl(x²)` is accepted when the rounding error `|x² − fl(x²)|` is below
/// `2^E · (2⁻²⁴ − 2⁻³⁰)` (`2^E ≤ fl(x²)` its power of two): half an ulp less `2^(E−30)`, so
/// `x²` is at least `2^(E−30)` (≥ 2⁻³¹ relative) from the nearest midpoint, 4.5× the largest
/// distance at which glibc's `powf(x, 2)` was seen to round the other way (2⁻³³·¹⁸, measured
/// over every float32; the ignored test `square_as_pow_is_powf_on_every_float32` rechecks it
/// against the C library at hand).
const HALF_ULP_LESS_MARGIN: f32 = 1.0 / (1u64 << 24) as f32 - 1.0 / (1u64 << 30) as f32;

/// `pow(x, 2)` ([`pow`]) with the same bits, fast: `x * x` when that is provably what `powf`
/// returns, `powf` otherwise. See the module documentation.
#[inline]
pub fn square_as_pow(x: f32) -> f32 {
    let exact = f64::from(x) * f64::from(x);
    let rounded = exact as f32;
    if x == 0.0 || square_is_settled(x, rounded, exact - f64::from(rounded)) { rounded } else { pow(x, 2.0) }
}

/// Whether `rounded = fl(x²)` with rounding error `error = x² − rounded` is far enough from a
/// midpoint for `powf(x, 2)` to round the same way (false for NaN and out-of-range `x`).
#[inline]
fn square_is_settled(x: f32, rounded: f32, error: f64) -> bool {
    let magnitude = x.abs();
    let power_of_two = f32::from_bits(rounded.to_bits() & 0x7F80_0000);
    // At a power of two the floats below are twice as dense: the midpoint under it is nearer.
    let on_power_of_two = rounded.to_bits() & 0x007F_FFFF == 0;
    (SMALLEST..=LARGEST).contains(&magnitude)
        && error.abs() < f64::from(power_of_two * HALF_ULP_LESS_MARGIN)
        && !(on_power_of_two && error < 0.0)
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    //! [`square_as_pow`](super::square_as_pow) on 8 lanes.

    use super::{HALF_ULP_LESS_MARGIN, LARGEST, SMALLEST, pow};
    use std::arch::x86_64::*;

    /// `powf(x, 2)` of each lane: `x * x` where settled (as the scalar rule), `powf` for the
    /// other lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn square_as_pow8(x: __m256) -> __m256 {
        let rounded = _mm256_mul_ps(x, x);
        // Exact in the checked range: the error of a float32 product is a float32.
        let error = _mm256_fmsub_ps(x, x, rounded);
        let magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0), x);
        let in_range = _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_GE_OQ>(magnitude, _mm256_set1_ps(SMALLEST)),
            _mm256_cmp_ps::<_CMP_LE_OQ>(magnitude, _mm256_set1_ps(LARGEST)),
        );
        let power_of_two = _mm256_and_ps(rounded, _mm256_castsi256_ps(_mm256_set1_epi32(0x7F80_0000)));
        let threshold = _mm256_mul_ps(power_of_two, _mm256_set1_ps(HALF_ULP_LESS_MARGIN));
        let small_error = _mm256_cmp_ps::<_CMP_LT_OQ>(_mm256_andnot_ps(_mm256_set1_ps(-0.0), error), threshold);
        let mantissa = _mm256_and_si256(_mm256_castps_si256(rounded), _mm256_set1_epi32(0x007F_FFFF));
        let on_power_of_two = _mm256_castsi256_ps(_mm256_cmpeq_epi32(mantissa, _mm256_setzero_si256()));
        let rounded_up = _mm256_cmp_ps::<_CMP_LT_OQ>(error, _mm256_setzero_ps());
        let settled =
            _mm256_andnot_ps(_mm256_and_ps(on_power_of_two, rounded_up), _mm256_and_ps(in_range, small_error));
        let settled = _mm256_or_ps(settled, _mm256_cmp_ps::<_CMP_EQ_OQ>(x, _mm256_setzero_ps()));
        let mask = _mm256_movemask_ps(settled);
        if mask == 0xFF {
            return rounded;
        }
        let mut lanes = [0f32; 8];
        let mut inputs = [0f32; 8];
        // SAFETY: both arrays hold 8 floats.
        unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), rounded);
            _mm256_storeu_ps(inputs.as_mut_ptr(), x);
        }
        for (i, (lane, &input)) in lanes.iter_mut().zip(&inputs).enumerate() {
            if mask & (1 << i) == 0 {
                *lane = pow(input, 2.0);
            }
        }
        // SAFETY: `lanes` holds 8 floats.
        unsafe { _mm256_loadu_ps(lanes.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn special_values() -> Vec<f32> {
        let mut xs = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7F80_0001),
            f32::MAX,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            SMALLEST,
            LARGEST,
            1.844_674_4e19, // 2^64: the square overflows
            std::f32::consts::SQRT_2,
        ];
        // Around the powers of two and the range limits.
        for e in -150..=128 {
            let p = 2f64.powi(e) as f32;
            xs.extend((0..5).map(|d| f32::from_bits(p.to_bits().wrapping_add(d).wrapping_sub(2))));
        }
        xs
    }

    fn check(xs: &[f32]) {
        for &x in xs {
            let want = pow(x, 2.0);
            let got = square_as_pow(x);
            assert!(got.to_bits() == want.to_bits(), "square_as_pow({x:e}) = {got:e}, powf = {want:e}");
        }
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::has_avx2_fma() {
            use std::arch::x86_64::*;
            for chunk in xs.chunks(8) {
                let mut lanes = [1f32; 8];
                lanes[..chunk.len()].copy_from_slice(chunk);
                // SAFETY: AVX2 + FMA are present; `lanes` holds 8 floats.
                let out = unsafe { crate::lanes::to_array(avx2::square_as_pow8(_mm256_loadu_ps(lanes.as_ptr()))) };
                for (x, y) in lanes.iter().zip(&out) {
                    assert_eq!(y.to_bits(), pow(*x, 2.0).to_bits(), "square_as_pow8({x:e})");
                }
            }
        }
    }

    #[test]
    fn equals_powf_at_special_values_and_on_a_sweep() {
        check(&special_values());
        let sweep: Vec<f32> = (0..u32::MAX / 65_537).map(|i| f32::from_bits(i * 65_537)).collect();
        check(&sweep);
        let near_one: Vec<f32> = (0..1 << 16).map(|i| f32::from_bits(0x3F00_0000 + i * 97)).collect();
        check(&near_one);
    }

    #[test]
    fn pow_is_the_library_powf_not_a_product() {
        // At least one input whose `powf(x, 2)` is not `x * x`: the compiler kept the call.
        let xs: Vec<f32> = (0..1 << 20).map(|i| f32::from_bits(0x3F80_0000 + i)).collect();
        let differing = xs.iter().filter(|&&x| pow(x, 2.0).to_bits() != (x * x).to_bits()).count();
        assert!(differing > 0, "powf(x, 2) equals x * x on all of [1, 1.125)");
        check(&xs);
    }

    /// Every float32 (4·10⁹ `powf` calls; `cargo test --release -- --ignored`).
    #[test]
    #[ignore = "exhaustive over 2^32 inputs: minutes in release"]
    fn square_as_pow_is_powf_on_every_float32() {
        use rayon::prelude::*;
        let chunk = 1u64 << 20;
        let mismatches: u64 = (0..(1u64 << 32) / chunk)
            .into_par_iter()
            .map(|c| {
                let xs: Vec<f32> = (c * chunk..(c + 1) * chunk).map(|b| f32::from_bits(b as u32)).collect();
                let scalar = xs.iter().filter(|&&x| square_as_pow(x).to_bits() != pow(x, 2.0).to_bits()).count();
                let mut lanes_off = 0;
                #[cfg(target_arch = "x86_64")]
                if crate::cpu::has_avx2_fma() {
                    use std::arch::x86_64::*;
                    for lanes in xs.chunks_exact(8) {
                        // SAFETY: AVX2 + FMA are present; 8 floats per chunk.
                        let out =
                            unsafe { crate::lanes::to_array(avx2::square_as_pow8(_mm256_loadu_ps(lanes.as_ptr()))) };
                        lanes_off +=
                            lanes.iter().zip(&out).filter(|(x, y)| y.to_bits() != pow(**x, 2.0).to_bits()).count();
                    }
                }
                (scalar + lanes_off) as u64
            })
            .sum();
        assert_eq!(mismatches, 0);
    }
}
