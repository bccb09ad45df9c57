//! MLX's float32 `power` on the CPU: `std::pow(float, float)`, the C library's `powf`, and
//! fast exact `power(x, 2)` and `power(x, 3)` for the norms (which square with `power` rather
//! than `square`) and the GELU (`x**3`).
//!
//! `powf(x, 2)` is not always `x * x`: glibc's `powf` rounds an approximation of `x²` (good
//! to about 2⁻³³ relative), not `x²` itself, so the two differ when `x²` lies that close to a
//! midpoint between floats (≈ 0.04 % of all float32). [`square_as_pow`] returns `x * x` where
//! `x²` is provably far from any midpoint and calls `powf` otherwise (≈ 1.5 % of values);
//! [`cube_as_pow`] likewise for `x³` (computed exactly in double-double).

use crate::cpu::Isa;

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
/// Cubes with `|x|` in `[2⁻³⁰, 2³⁰]` (or `x = ±0`) are checked; the others go to `powf`. In
/// this range the double-double `x³` is exact and the threshold below is exact.
const CUBE_SMALLEST: f32 = 1.0 / (1u64 << 30) as f32;
const CUBE_LARGEST: f32 = (1u64 << 30) as f32;
/// `fl(x²)` is accepted when the rounding error `|x² − fl(x²)|` is below
/// `2^E · (2⁻²⁴ − 2⁻³⁰)` (`2^E ≤ fl(x²)` its power of two): half an ulp less `2^(E−30)`, so
/// `x²` is at least `2^(E−30)` (≥ 2⁻³¹ relative) from the nearest midpoint. The same rule
/// serves `x³`. What this relies on: the C library's `powf(x, 2)` and `powf(x, 3)` round the
/// exact value correctly whenever it lies that far from a midpoint; the ignored tests
/// `…_is_powf_on_every_float32` check it against the C library at hand.
const HALF_ULP_LESS_MARGIN: f32 = 1.0 / (1u64 << 24) as f32 - 1.0 / (1u64 << 30) as f32;

/// `pow(x, 2)` ([`pow`]) with the same bits, fast: `x * x` when that is provably what `powf`
/// returns, `powf` otherwise. See the module documentation.
#[inline]
pub fn square_as_pow(x: f32) -> f32 {
    let exact = f64::from(x) * f64::from(x);
    let rounded = exact as f32;
    if x == 0.0 || square_is_settled(x, rounded, exact - f64::from(rounded)) { rounded } else { pow(x, 2.0) }
}

/// `pow(x, 3)` ([`pow`]) with the same bits, fast: the float32 rounding of the exact `x³`
/// when that is provably what `powf` returns, `powf` otherwise. See the module documentation.
#[inline]
pub fn cube_as_pow(x: f32) -> f32 {
    let x64 = f64::from(x);
    let square = x64 * x64;
    let high = square * x64;
    let low = square.mul_add(x64, -high);
    let rounded = high as f32;
    let error = (high - f64::from(rounded)) + low;
    if x == 0.0 || is_settled(x.abs(), CUBE_SMALLEST..=CUBE_LARGEST, rounded, error) { rounded } else { pow(x, 3.0) }
}

/// `out[i] = pow(x[i], 3)` ([`cube_as_pow`]) for slices of one length (the shorter bounds
/// the work), 8 lanes per AVX2 vector where `isa` has AVX2.
pub(crate) fn cube_as_pow_slice(isa: Isa, x: &[f32], out: &mut [f32]) {
    let n = x.len().min(out.len());
    #[cfg(target_arch = "x86_64")]
    let done = isa.avx2().map_or(0, |avx2| avx2::cube_as_pow_lanes(avx2, &x[..n], &mut out[..n]));
    #[cfg(not(target_arch = "x86_64"))]
    let done = {
        let _ = isa;
        0
    };
    for i in done..n {
        out[i] = cube_as_pow(x[i]);
    }
}

/// `rounded` with the lanes not `settled` replaced by `powf(x, y)`: the lane functions' rare
/// path.
#[inline]
fn with_powf<const N: usize>(mut rounded: [f32; N], x: [f32; N], settled: [bool; N], y: f32) -> [f32; N] {
    for ((lane, x), settled) in rounded.iter_mut().zip(x).zip(settled) {
        if !settled {
            *lane = pow(x, y);
        }
    }
    rounded
}

/// Whether `rounded = fl(x²)` with rounding error `error = x² − rounded` is far enough from a
/// midpoint for `powf(x, 2)` to round the same way (false for NaN and out-of-range `x`).
#[inline]
fn square_is_settled(x: f32, rounded: f32, error: f64) -> bool {
    is_settled(x.abs(), SMALLEST..=LARGEST, rounded, error)
}

/// Whether `rounded`, the float32 nearest a power `p` of `x` (`|x|` = `magnitude`) with
/// `error = p − rounded`, is far enough from a midpoint for `powf` to round `p` the same way.
#[inline]
fn is_settled(magnitude: f32, range: std::ops::RangeInclusive<f32>, rounded: f32, error: f64) -> bool {
    let power_of_two = f32::from_bits(rounded.to_bits() & 0x7F80_0000);
    // At a power of two the floats below are twice as dense: the midpoint under it is nearer.
    let on_power_of_two = rounded.to_bits() & 0x007F_FFFF == 0;
    range.contains(&magnitude)
        && error.abs() < f64::from(power_of_two * HALF_ULP_LESS_MARGIN)
        && !(on_power_of_two && error < 0.0)
}

crate::simd::stamp! {
    lanes v for Avx2, Neon;

    /// [`square_as_pow`](super::square_as_pow) of each lane: `x * x` where settled (as the
    /// scalar rule), `powf` for the other lanes.
    pub(crate) fn square_as_pow(x: v::V) -> v::V {
        let rounded = v::mul(x, x);
        // `x · x − rounded` in one rounding, exact in the checked range: the error of a
        // float32 product is a float32.
        let error = v::mul_add(x, x, v::neg(rounded));
        let magnitude = v::abs(x);
        let in_range = v::and(v::ge(magnitude, v::splat(SMALLEST)), v::le(magnitude, v::splat(LARGEST)));
        let threshold = v::mul(v::bits_and(rounded, 0x7F80_0000), v::splat(HALF_ULP_LESS_MARGIN));
        let small_error = v::lt(v::abs(error), threshold);
        let on_power_of_two = v::bits_zero(rounded, 0x007F_FFFF);
        let rounded_up = v::lt(error, v::splat(0.0));
        let settled = v::and_not(v::and(in_range, small_error), v::and(on_power_of_two, rounded_up));
        let settled = v::or(settled, v::eq(x, v::splat(0.0)));
        if v::all(settled) {
            return rounded;
        }
        v::from_array(&with_powf(v::to_array(rounded), v::to_array(x), v::mask_lanes(settled), 2.0))
    }

    /// [`square_as_pow`] of each run of lanes of `x` (for the tests).
    #[cfg(test)]
    entry fn squares(x: &[f32]) -> Vec<f32> {
        x.chunks_exact(v::LANES).flat_map(|chunk| v::to_array(square_as_pow(v::load_at(chunk, 0)))).collect()
    }

    only Avx2 {
        use std::arch::x86_64::*;

        /// `out[i] = powf(x[i], 3)` for the leading multiple of 8 of the slices (of one length),
        /// [`cube_as_pow8`] on each 8; returns how many were done.
        entry fn cube_as_pow_lanes(x: &[f32], out: &mut [f32]) -> usize {
            let n = x.len().min(out.len()) / 8 * 8;
            for (x, out) in x[..n].as_chunks::<8>().0.iter().zip(out[..n].as_chunks_mut::<8>().0) {
                *out = v::to_array(cube_as_pow8(v::from_array(x)));
            }
            n
        }

        /// `powf(x, 3)` of each lane: the float32 rounding of the exact cube (in double
        /// precision, four lanes at a time) where settled (as the scalar rule), `powf` for the
        /// other lanes.
        pub(crate) fn cube_as_pow8(x: __m256) -> __m256 {
            let mut settled = 0;
            let mut rounded = [_mm_setzero_ps(); 2];
            for (half, (out, lanes)) in
                rounded.iter_mut().zip([_mm256_castps256_ps128(x), _mm256_extractf128_ps::<1>(x)]).enumerate()
            {
                let x64 = _mm256_cvtps_pd(lanes);
                let square = _mm256_mul_pd(x64, x64);
                let high = _mm256_mul_pd(square, x64);
                let low = _mm256_fmsub_pd(square, x64, high);
                *out = _mm256_cvtpd_ps(high);
                let error = _mm256_add_pd(_mm256_sub_pd(high, _mm256_cvtps_pd(*out)), low);
                let power_of_two = _mm_and_ps(*out, _mm_castsi128_ps(_mm_set1_epi32(0x7F80_0000)));
                let threshold = _mm256_cvtps_pd(_mm_mul_ps(power_of_two, _mm_set1_ps(HALF_ULP_LESS_MARGIN)));
                let small = _mm256_cmp_pd::<_CMP_LT_OQ>(_mm256_andnot_pd(_mm256_set1_pd(-0.0), error), threshold);
                let below = _mm256_cmp_pd::<_CMP_LT_OQ>(error, _mm256_setzero_pd());
                let mantissa = _mm_and_si128(_mm_castps_si128(*out), _mm_set1_epi32(0x007F_FFFF));
                let on_power_of_two = _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(mantissa, _mm_setzero_si128())));
                let lane_bits = _mm256_movemask_pd(small) & !(on_power_of_two & _mm256_movemask_pd(below));
                settled |= lane_bits << (4 * half);
            }
            let magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0), x);
            let in_range = _mm256_movemask_ps(_mm256_and_ps(
                _mm256_cmp_ps::<_CMP_GE_OQ>(magnitude, _mm256_set1_ps(CUBE_SMALLEST)),
                _mm256_cmp_ps::<_CMP_LE_OQ>(magnitude, _mm256_set1_ps(CUBE_LARGEST)),
            ));
            let zero = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(x, _mm256_setzero_ps()));
            let settled = (settled & in_range) | zero;
            let rounded = _mm256_set_m128(rounded[1], rounded[0]);
            if settled == 0xFF {
                return rounded;
            }
            let settled = std::array::from_fn(|i| settled & (1 << i) != 0);
            v::from_array(&with_powf(v::to_array(rounded), v::to_array(x), settled, 3.0))
        }

        /// [`cube_as_pow8`] of each run of 8 of `x` (for the tests).
        #[cfg(test)]
        entry fn cubes(x: &[f32]) -> Vec<f32> {
            x.chunks_exact(8).flat_map(|chunk| v::to_array(cube_as_pow8(v::load_at(chunk, 0)))).collect()
        }
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

    /// The scalar and the 8-lane function of power `y` (2 or 3) against `powf` on `xs`;
    /// the number of mismatches.
    fn mismatches(xs: &[f32], y: f32) -> usize {
        let scalar = if y == 2.0 { square_as_pow } else { cube_as_pow };
        xs.iter().filter(|&&x| scalar(x).to_bits() != pow(x, y).to_bits()).count() + lane_mismatches(xs, y)
    }

    /// The lanes functions of power `y` (2 or 3) on every instruction set this CPU runs, against
    /// `powf` on `xs`: the squares everywhere, the cubes on AVX2 (the other instruction sets
    /// have none).
    fn lane_mismatches(xs: &[f32], y: f32) -> usize {
        let mut padded = xs.to_vec();
        padded.resize(xs.len().next_multiple_of(16), 1.0);
        let isa = crate::cpu::isa();
        let mut results: Vec<Vec<f32>> = Vec::new();
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = isa.avx2() {
            results.push(if y == 2.0 { avx2::squares(t, &padded) } else { avx2::cubes(t, &padded) });
        }
        #[cfg(target_arch = "aarch64")]
        if let Some(t) = isa.neon().filter(|_| y == 2.0) {
            results.push(neon::squares(t, &padded));
        }
        let _ = isa;
        let wrong =
            |out: &Vec<f32>| padded.iter().zip(out).filter(|(x, r)| r.to_bits() != pow(**x, y).to_bits()).count();
        results.iter().map(wrong).sum()
    }

    fn check(xs: &[f32]) {
        assert_eq!(mismatches(xs, 2.0), 0, "squares");
        assert_eq!(mismatches(xs, 3.0), 0, "cubes");
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
        // Inputs whose `powf(x, 2)` is not `x * x`: the compiler kept the call.
        let xs: Vec<f32> = (0..1 << 20).map(|i| f32::from_bits(0x3F80_0000 + i)).collect();
        let differing = xs.iter().filter(|&&x| pow(x, 2.0).to_bits() != (x * x).to_bits()).count();
        assert!(differing > 0, "powf(x, 2) equals x * x on all of [1, 1.125)");
        check(&xs);
    }

    fn every_float32(y: f32) -> u64 {
        use rayon::prelude::*;
        let chunk = 1u64 << 20;
        (0..(1u64 << 32) / chunk)
            .into_par_iter()
            .map(|c| {
                let xs: Vec<f32> = (c * chunk..(c + 1) * chunk).map(|b| f32::from_bits(b as u32)).collect();
                mismatches(&xs, y) as u64
            })
            .sum()
    }

    /// Every float32 (8·10⁹ `powf` calls; `cargo test --release -- --ignored`).
    #[test]
    #[ignore = "exhaustive over 2^32 inputs: minutes in release"]
    fn square_as_pow_is_powf_on_every_float32() {
        assert_eq!(every_float32(2.0), 0);
    }

    /// Every float32 (8·10⁹ `powf` calls; `cargo test --release -- --ignored`).
    #[test]
    #[ignore = "exhaustive over 2^32 inputs: minutes in release"]
    fn cube_as_pow_is_powf_on_every_float32() {
        assert_eq!(every_float32(3.0), 0);
    }
}
