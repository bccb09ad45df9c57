//! MLX 0.32's CPU `exp` (`mlx/backend/cpu/simd/math.h`): the Cephes polynomial with `fma`.
//!
//! [`exp`] is the definition of the bits: MLX's `simd::exp` for one float32 lane, written in
//! the same order of operations. The slice kernels ([`exp_in_place`], [`exp_slice`]), the
//! 8-lane AVX2 function (`avx2::exp8`, for the other kernels of this crate) and the 4-lane NEON
//! one (`neon::exp4`, on aarch64) give the same bits for every input, NaN payloads included.

use crate::cpu::Isa;
use crate::{Error, Float, Result, parallel};

/// `log2(e)` as MLX writes it (`1.442695f`; the same float32 as `std::f32::consts::LOG2_E`).
#[allow(clippy::approx_constant, reason = "MLX's literal as written")]
const LOG2_E: f32 = 1.442_695;
/// The Cephes coefficients of `2^f` on `[-0.5, 0.5]`, highest degree first, as float32
/// literals (`…f` in MLX's source).
#[allow(
    clippy::excessive_precision,
    reason = "MLX's literals as written; each parses to the float32 MLX's compiler made of it"
)]
const POLY: [f32; 7] = [
    1.535_336_188_319_500e-4,
    1.339_887_440_266_574e-3,
    9.618_437_357_674_640e-3,
    5.550_332_471_162_809e-2,
    2.402_264_791_363_012e-1,
    6.931_472_028_550_421e-1,
    1.0,
];
/// Above this `exp` is `+∞`, below its negation `0` (strict comparisons; the bounds themselves
/// go through the polynomial).
const LIMIT: f32 = 88.0;

/// Slices shorter than this run on the calling thread.
const PARALLEL_MIN: usize = 1 << 15;

/// MLX's float32 `exp(x)`, bit for bit:
///
/// ```text
/// y = x * 1.442695f                          // float32 product
/// n = floor((double) y + 0.5)                // `Simd<float,1> + 0.5` is a double sum
/// f = y - n
/// p = 1.5353e-4; p = fma(p, f, c) …          // six std::fma steps (POLY)
/// r = bits((int(n) + 127) << 23) * p
/// r = isnan(x) ? x : r;  r = x > 88 ? +inf : r;  r = x < -88 ? 0 : r
/// ```
///
/// A NaN comes back unchanged (sign and payload). `-88 ≤ x < -87.68…` gives 0 (the exponent
/// field of `2^-127` is 0); `exp(-0) = exp(0) = 1`.
#[inline]
pub fn exp(x: f32) -> f32 {
    let y = x * LOG2_E;
    // In MLX `x + 0.5` adds a double to a float lane: the sum is a double, exact for every
    // float32 `y`, and `floor` of it is converted back to float (exactly, in the range used).
    let n = (f64::from(y) + 0.5).floor() as f32;
    let f = y - n;
    let mut p = POLY[0];
    for &c in &POLY[1..] {
        p = p.mul_add(f, c);
    }
    // `n` is an integer in [-127, 127] whenever the result is used; outside, the int
    // conversion's value is irrelevant (C++ leaves it undefined, Rust saturates).
    let two_to_n = f32::from_bits(((n as i32).wrapping_add(127) << 23) as u32);
    let mut r = if x.is_nan() { x } else { two_to_n * p };
    if x > LIMIT {
        r = f32::INFINITY;
    }
    if x < -LIMIT {
        r = 0.0;
    }
    r
}

/// Replaces every `x` of `values` with [`exp`]`(x)`: MLX's `exp` of a float32 array. Runs over
/// all cores for long slices, with AVX2 + FMA where available; the bits do not depend on either.
pub fn exp_in_place(values: &mut [f32]) {
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(values, 1, PARALLEL_MIN, |_, block| exp_block_in_place(isa, block));
}

/// `out[i] = T(exp(f32(x[i])))`: MLX's `exp` of an array of dtype `T` (float32 or bf16; a
/// bf16 result is rounded as MLX rounds, every NaN becoming `0x7FC0`). `x` and `out` have one
/// length, else [`Error::Shape`].
pub fn exp_slice<T: Float>(x: &[T], out: &mut [T]) -> Result<()> {
    if x.len() != out.len() {
        return Err(Error::shape("exp", format!("input of {} values, output of {}", x.len(), out.len())));
    }
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(out, 1, PARALLEL_MIN, |start, block| {
        let x = &x[start..start + block.len()];
        for (o, chunk) in block.chunks_mut(CHUNK).zip(x.chunks(CHUNK)) {
            let mut lanes = [0f32; CHUNK];
            let lanes = &mut lanes[..chunk.len()];
            for (l, v) in lanes.iter_mut().zip(chunk) {
                *l = v.to_f32();
            }
            exp_block_in_place(isa, lanes);
            for (o, &l) in o.iter_mut().zip(lanes.iter()) {
                *o = T::from_f32(l);
            }
        }
    });
    Ok(())
}

/// Elements converted to float32 at a time by [`exp_slice`].
const CHUNK: usize = 256;

/// [`exp`] over one block, on this thread, by the fastest path the CPU has.
fn exp_block_in_place(isa: Isa, values: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = isa.avx2() {
        avx2::exp_in_place(avx2, values);
        return;
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(neon) = isa.neon() {
        neon::exp_in_place(neon, values);
        return;
    }
    let _ = isa;
    exp_in_place_portable(values);
}

/// The portable loop: [`exp`] of each element.
pub(crate) fn exp_in_place_portable(values: &mut [f32]) {
    for v in values {
        *v = exp(*v);
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    //! [`exp`](super::exp) on 8 float32 lanes with AVX2 + FMA.

    use super::{LIMIT, LOG2_E, POLY, exp};
    use crate::lanes::{from_array, to_array};
    use std::arch::x86_64::*;

    /// [`exp`](super::exp) of each of 8 lanes, the same bits.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn exp8(x: __m256) -> __m256 {
        let r = exp8_nonpositive(x);
        let r = _mm256_blendv_ps(r, x, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
        _mm256_blendv_ps(r, _mm256_set1_ps(f32::INFINITY), _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_set1_ps(LIMIT)))
    }

    /// [`exp`](super::exp) of each of 8 lanes that are all `≤ 0` or `−∞` (no NaN), the same
    /// bits: [`exp8`] without the NaN and overflow cases (the softmax's `exp(s − max)`).
    ///
    /// `floor(y + 0.5)` (a double sum in MLX) is computed as the float32 `floor(y + 0.5f)`:
    /// for `|y| < 2^23` the float32 sum is exact, or rounds without crossing an integer, except
    /// at `y = 0.5 − 2⁻²⁵` (it rounds up to 1), which no float32 `x · 1.442695f` equals; for
    /// `|y| ≥ 2^23` (`|x|` far above 88) the result is overridden by the limits.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn exp8_nonpositive(x: __m256) -> __m256 {
        let y = _mm256_mul_ps(x, _mm256_set1_ps(LOG2_E));
        let n = _mm256_floor_ps(_mm256_add_ps(y, _mm256_set1_ps(0.5)));
        let f = _mm256_sub_ps(y, n);
        let mut p = _mm256_set1_ps(POLY[0]);
        for &c in &POLY[1..] {
            p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(c));
        }
        let biased = _mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127));
        let two_to_n = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(biased));
        let r = _mm256_mul_ps(two_to_n, p);
        _mm256_andnot_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_set1_ps(-LIMIT)), r)
    }

    crate::cpu::target_entry! {
        Avx2;
        /// [`exp_in_place_tf`] behind the token that proves its target features.
        pub(crate) fn exp_in_place(values: &mut [f32]) = exp_in_place_tf;
    }

    /// [`exp`](super::exp) of every element, 8 lanes at a time, the tail one by one.
    #[target_feature(enable = "avx2,fma")]
    fn exp_in_place_tf(values: &mut [f32]) {
        let (chunks, rest) = values.as_chunks_mut::<8>();
        for chunk in chunks {
            *chunk = to_array(exp8(from_array(chunk)));
        }
        for v in rest {
            *v = exp(*v);
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
    //! [`exp`](super::exp) on 16 float32 lanes with AVX-512F: the operations of
    //! [`avx2::exp8`](super::avx2::exp8) on wider registers, the same bits.

    use super::{LIMIT, LOG2_E, POLY};
    use std::arch::x86_64::*;

    /// [`exp`](super::exp) of each of 16 lanes, the same bits.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) fn exp16(x: __m512) -> __m512 {
        let r = exp16_nonpositive(x);
        let r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x), r, x);
        let above = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, _mm512_set1_ps(LIMIT));
        _mm512_mask_blend_ps(above, r, _mm512_set1_ps(f32::INFINITY))
    }

    /// [`exp`](super::exp) of each of 16 lanes that are all `≤ 0` or `−∞` (no NaN), the same
    /// bits: [`exp16`] without the NaN and overflow cases, computed as
    /// [`avx2::exp8_nonpositive`](super::avx2::exp8_nonpositive) computes it.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) fn exp16_nonpositive(x: __m512) -> __m512 {
        let y = _mm512_mul_ps(x, _mm512_set1_ps(LOG2_E));
        let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(_mm512_add_ps(
            y,
            _mm512_set1_ps(0.5),
        ));
        let f = _mm512_sub_ps(y, n);
        let mut p = _mm512_set1_ps(POLY[0]);
        for &c in &POLY[1..] {
            p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(c));
        }
        let biased = _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127));
        let two_to_n = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(biased));
        let r = _mm512_mul_ps(two_to_n, p);
        let below = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, _mm512_set1_ps(-LIMIT));
        _mm512_mask_blend_ps(below, r, _mm512_setzero_ps())
    }
}

#[cfg(target_arch = "aarch64")]
pub(crate) mod neon;

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;
    use proptest::prelude::*;

    /// Arguments that stress each step of MLX's `exp`.
    fn edge_cases() -> Vec<f32> {
        let mut xs = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            88.0,
            -88.0,
            88.000_01,
            -88.000_01,
            87.999_99,
            -87.999_99,
            -87.6,
            -87.34,
            88.72,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::from_bits(0x8000_0001),
            f32::from_bits(0x007F_FFFF),
            f32::EPSILON,
            1e-30,
            -1e-30,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7F80_0001), // signalling NaN, payload 1
            f32::from_bits(0xFFC1_2345), // negative quiet NaN with a payload
            f32::from_bits(0x7FBF_FFFF),
        ];
        // y = x·log2(e) at and around the half-integers, where `floor(y + 0.5)` decides; the
        // float32 `y + 0.5f` would round 0.5 − 2⁻²⁵ up to 1.
        for k in -128..=128 {
            let half = k as f32 + 0.5;
            let x = half / LOG2_E;
            let mut b = x.to_bits().wrapping_sub(4);
            for _ in 0..9 {
                xs.push(f32::from_bits(b));
                b = b.wrapping_add(1);
            }
        }
        let target = 0.5f32 - 2f32.powi(-25);
        xs.extend((0u32..1 << 16).map(|d| f32::from_bits((target / LOG2_E).to_bits() - (1 << 15) + d)));
        xs
    }

    fn bits(xs: &[f32]) -> Vec<u32> {
        xs.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn scalar_matches_the_definition_at_edge_cases() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-0.0), 1.0);
        assert_eq!(exp(88.000_01), f32::INFINITY);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(-88.000_01).to_bits(), 0);
        assert_eq!(exp(f32::NEG_INFINITY).to_bits(), 0);
        // 2^-127 has the bits of +0: MLX's exp is 0 from -88 to about -87.68 (where x·log2(e) reaches -126.5).
        assert_eq!(exp(-88.0).to_bits(), 0);
        for nan in [0x7FC0_0000u32, 0xFFC1_2345, 0x7F80_0001] {
            assert_eq!(exp(f32::from_bits(nan)).to_bits(), nan, "NaN {nan:#x} is returned as is");
        }
        // Close to the true exponential where it is representable.
        for i in -8700..=8800 {
            let x = i as f32 * 0.01;
            let (got, want) = (f64::from(exp(x)), f64::from(x).exp());
            // x · log2(e) is rounded to float32: an error of |x|·2⁻²⁴ in the exponent.
            if want > 1e-37 {
                let tolerance = 1e-6 + 1e-7 * f64::from(x.abs());
                assert!(((got - want) / want).abs() < tolerance, "exp({x}) = {got}, want {want}");
            }
        }
    }

    /// `y + 0.5` is a double sum in MLX; a float32 sum would differ only at `y = 0.5 − 2⁻²⁵`
    /// (it rounds to 1, changing `n`). No float32 `x` has `x · 1.442695f` there, so both
    /// readings give the same `exp`; the paths agree around it.
    #[test]
    fn the_half_is_added_in_double_precision() {
        let y = 0.5f32 - 2f32.powi(-25);
        assert_eq!((y + 0.5f32).floor(), 1.0, "the float32 sum rounds up");
        assert_eq!((f64::from(y) + 0.5).floor(), 0.0);
        let xs: Vec<f32> = (0u32..1 << 16).map(|d| f32::from_bits((y / LOG2_E).to_bits() - (1 << 15) + d)).collect();
        assert!(xs.iter().all(|&x| x * LOG2_E != y));
        assert!(xs.iter().any(|&x| x * LOG2_E < y) && xs.iter().any(|&x| x * LOG2_E > y));
        let mut fast = xs.clone();
        exp_block_in_place(crate::cpu::isa(), &mut fast);
        let twin: Vec<f32> = xs.iter().map(|&x| exp(x)).collect();
        assert_eq!(bits(&fast), bits(&twin));
    }

    #[test]
    fn the_paths_agree_at_edge_cases() {
        let xs = edge_cases();
        let want: Vec<f32> = xs.iter().map(|&x| exp(x)).collect();
        let mut portable = xs.clone();
        exp_in_place_portable(&mut portable);
        assert_eq!(bits(&portable), bits(&want));
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = crate::cpu::isa().avx2() {
            // Every edge case in each of the 8 lanes.
            for shift in 0..8 {
                let mut lanes = xs[shift..].to_vec();
                avx2::exp_in_place(avx2, &mut lanes);
                assert_eq!(bits(&lanes), bits(&want[shift..]), "lane shift {shift}");
            }
        }
        #[cfg(target_arch = "aarch64")]
        if let Some(neon) = crate::cpu::isa().neon() {
            // Every edge case in each of the 4 lanes.
            for shift in 0..4 {
                let mut lanes = xs[shift..].to_vec();
                neon::exp_in_place(neon, &mut lanes);
                assert_eq!(bits(&lanes), bits(&want[shift..]), "lane shift {shift}");
            }
        }
        let mut all = xs.clone();
        exp_in_place(&mut all);
        assert_eq!(bits(&all), bits(&want));
    }

    /// The 16-lane functions on the edge cases and a sweep of bit patterns: `exp16` everywhere,
    /// `exp16_nonpositive` on its domain (`≤ 0` or `−∞`).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_16_lane_functions_agree_with_the_twin() {
        if crate::cpu::isa().avx512().is_none() {
            return;
        }
        use std::arch::x86_64::*;
        let mut xs = edge_cases();
        xs.extend((0..u32::MAX / 4099).map(|i| f32::from_bits(i * 4099 + (i & 7))));
        let chunks = xs.len() / 16;
        for c in 0..chunks {
            let lanes = &xs[c * 16..c * 16 + 16];
            let (mut all, mut nonpositive) = ([0f32; 16], [0f32; 16]);
            let domain: Vec<f32> = lanes.iter().map(|&x| if x <= 0.0 { x } else { -x.abs() }).collect();
            let domain: Vec<f32> = domain.iter().map(|&x| if x.is_nan() { f32::NEG_INFINITY } else { x }).collect();
            // SAFETY: AVX-512F is available (checked above); each slice holds 16 floats.
            unsafe {
                _mm512_storeu_ps(all.as_mut_ptr(), avx512::exp16(_mm512_loadu_ps(lanes.as_ptr())));
                _mm512_storeu_ps(nonpositive.as_mut_ptr(), avx512::exp16_nonpositive(_mm512_loadu_ps(domain.as_ptr())));
            }
            let want: Vec<f32> = lanes.iter().map(|&x| exp(x)).collect();
            assert_eq!(bits(&all), bits(&want), "exp16 of {lanes:?}");
            let want: Vec<f32> = domain.iter().map(|&x| exp(x)).collect();
            assert_eq!(bits(&nonpositive), bits(&want), "exp16_nonpositive of {domain:?}");
        }
    }

    /// The 4-lane NEON functions on the edge cases and a sweep of bit patterns: `exp4`
    /// everywhere, `exp4_nonpositive` on its domain (`≤ 0` or `−∞`).
    #[test]
    #[cfg(target_arch = "aarch64")]
    fn the_4_lane_functions_agree_with_the_twin() {
        let Some(neon) = crate::cpu::isa().neon() else { return };
        let mut xs = edge_cases();
        xs.extend((0..u32::MAX / 4099).map(|i| f32::from_bits(i * 4099 + (i & 7))));
        for lanes in xs.as_chunks::<4>().0 {
            let domain = lanes.map(|x| if x.is_nan() { f32::NEG_INFINITY } else { -x.abs() });
            let (all, _) = neon::lanes(neon, lanes);
            let (_, nonpositive) = neon::lanes(neon, &domain);
            assert_eq!(bits(&all), bits(&lanes.map(exp)), "exp4 of {lanes:?}");
            assert_eq!(bits(&nonpositive), bits(&domain.map(exp)), "exp4_nonpositive of {domain:?}");
        }
    }

    /// A structured sweep: every 1009th float32 bit pattern (all exponents, both signs, NaNs).
    #[test]
    fn the_paths_agree_on_a_sweep_of_bit_patterns() {
        let xs: Vec<f32> = (0..u32::MAX / 1009).map(|i| f32::from_bits(i * 1009 + (i & 3))).collect();
        let mut fast = xs.clone();
        exp_in_place(&mut fast);
        for (&x, &y) in xs.iter().zip(&fast) {
            assert_eq!(y.to_bits(), exp(x).to_bits(), "exp({x:e}) bits {:#x}", x.to_bits());
        }
    }

    /// Every float32 (4·10⁹ values; run with `cargo test --release -- --ignored`).
    #[test]
    #[ignore = "exhaustive over 2^32 inputs: minutes in release"]
    fn the_fast_path_equals_the_twin_on_every_float32() {
        let chunk = 1u64 << 20;
        let mismatches: u64 = (0..(1u64 << 32) / chunk)
            .map(|c| {
                let xs: Vec<f32> = (c * chunk..(c + 1) * chunk).map(|b| f32::from_bits(b as u32)).collect();
                let mut fast = xs.clone();
                exp_in_place(&mut fast);
                xs.iter().zip(&fast).filter(|(x, y)| exp(**x).to_bits() != y.to_bits()).count() as u64
            })
            .sum();
        assert_eq!(mismatches, 0);
    }

    #[test]
    fn bf16_slices_round_as_mlx() {
        let xs: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
        let mut out = vec![bf16::ZERO; xs.len()];
        exp_slice(&xs, &mut out).unwrap();
        for (&x, &y) in xs.iter().zip(&out) {
            assert_eq!(y.to_bits(), crate::bf16_from_f32(exp(x.to_f32())).to_bits(), "exp({x})");
        }
        assert_eq!(out[0x7FC1].to_bits(), 0x7FC0, "NaNs come back canonical");
        assert!(matches!(exp_slice(&xs[1..], &mut out), Err(Error::Shape { .. })));
    }

    proptest! {
        #[test]
        fn fast_equals_twin_on_random_slices(
            xs in prop::collection::vec(
                prop_oneof![
                    any::<u32>().prop_map(f32::from_bits),
                    -100f32..100.0,
                    -1f32..1.0,
                    prop::sample::select(edge_cases()),
                ],
                0..300,
            )
        ) {
            let mut fast = xs.clone();
            exp_in_place(&mut fast);
            let mut portable = xs.clone();
            exp_in_place_portable(&mut portable);
            let twin: Vec<f32> = xs.iter().map(|&x| exp(x)).collect();
            prop_assert_eq!(bits(&fast), bits(&twin));
            prop_assert_eq!(bits(&portable), bits(&twin));
        }
    }
}
