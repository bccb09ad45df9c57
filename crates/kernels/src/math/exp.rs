//! MLX 0.32's CPU `exp` (`mlx/backend/cpu/simd/math.h`): the Cephes polynomial with `fma`.
//!
//! [`exp`] is the definition of the bits: MLX's `simd::exp` for one float32 lane, written in
//! the same order of operations. The slice kernels ([`exp_in_place`], [`exp_slice`]) and the
//! lanes function, written once and stamped for AVX2 (8 lanes), AVX-512 (16) and NEON (4):
//! `avx2::exp`, `avx512::exp`, `neon::exp`, for the other kernels of this crate, give the same
//! bits for every input, NaN payloads included.

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
/// all cores for long slices, 16, 8 or 4 lanes at a time (AVX-512, AVX2 + FMA, NEON) where the
/// CPU has them; the bits do not depend on either.
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
    if let Some(avx512) = isa.avx512() {
        avx512::exp_in_place(avx512, values);
        return;
    }
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

crate::simd::stamp! {
    lanes v for Avx2, Avx512, Neon;

    /// [`exp`](super::exp) of each lane, the same bits.
    pub(crate) fn exp(x: v::V) -> v::V {
        let r = v::select(v::is_nan(x), x, exp_nonpositive(x));
        v::select(v::gt(x, v::splat(LIMIT)), v::splat(f32::INFINITY), r)
    }

    /// [`exp`](super::exp) of each lane, all `≤ 0` or `−∞` (no NaN), the same bits: [`exp`]
    /// without the NaN and overflow cases (the softmax's `exp(s − max)`).
    ///
    /// `floor(y + 0.5)` (a double sum in MLX) is computed as the float32 `floor(y + 0.5f)`:
    /// for `|y| < 2^23` the float32 sum is exact, or rounds without crossing an integer, except
    /// at `y = 0.5 − 2⁻²⁵` (it rounds up to 1), which no float32 `x · 1.442695f` equals; for
    /// `|y| ≥ 2^23` (`|x|` far above 88) the result is overridden by the limits.
    pub(crate) fn exp_nonpositive(x: v::V) -> v::V {
        let y = v::mul(x, v::splat(LOG2_E));
        let n = v::floor(v::add(y, v::splat(0.5)));
        let f = v::sub(y, n);
        let mut p = v::splat(POLY[0]);
        for &c in &POLY[1..] {
            // `c + p · f` rounded once: `fma(p, f, c)`.
            p = v::mul_add(p, f, v::splat(c));
        }
        let r = v::mul(v::two_to(n), p);
        v::clear(v::lt(x, v::splat(-LIMIT)), r)
    }

    /// [`exp`](super::exp) of every element, `LANES` at a time, the tail one by one.
    entry fn exp_in_place(values: &mut [f32]) {
        let (chunks, rest) = values.as_chunks_mut::<{ v::LANES }>();
        for chunk in chunks {
            *chunk = v::to_array(exp(v::from_array(chunk)));
        }
        for x in rest {
            *x = super::exp(*x);
        }
    }

    /// [`exp`] and [`exp_nonpositive`] of each run of lanes of `x` (for the tests).
    #[cfg(test)]
    entry fn lanes(x: &[f32]) -> (Vec<f32>, Vec<f32>) {
        let (mut all, mut nonpositive) = (Vec::new(), Vec::new());
        for chunk in x.chunks_exact(v::LANES) {
            let lanes = v::load_at(chunk, 0);
            all.extend(v::to_array(exp(lanes)));
            nonpositive.extend(v::to_array(exp_nonpositive(lanes)));
        }
        (all, nonpositive)
    }
}

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

    /// The instruction sets this CPU runs: each one's name, lanes, slice kernel and lanes
    /// functions (`exp`, `exp_nonpositive` of each run of lanes).
    #[allow(clippy::type_complexity, reason = "a test's table of closures")]
    fn vector_paths() -> Vec<(&'static str, usize, Box<dyn Fn(&mut [f32])>, Box<dyn Fn(&[f32]) -> (Vec<f32>, Vec<f32>)>)>
    {
        let isa = crate::cpu::isa();
        let mut paths: Vec<(
            &'static str,
            usize,
            Box<dyn Fn(&mut [f32])>,
            Box<dyn Fn(&[f32]) -> (Vec<f32>, Vec<f32>)>,
        )> = Vec::new();
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = isa.avx2() {
            paths.push(("avx2", 8, Box::new(move |x| avx2::exp_in_place(t, x)), Box::new(move |x| avx2::lanes(t, x))));
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = isa.avx512() {
            paths.push((
                "avx512",
                16,
                Box::new(move |x| avx512::exp_in_place(t, x)),
                Box::new(move |x| avx512::lanes(t, x)),
            ));
        }
        #[cfg(target_arch = "aarch64")]
        if let Some(t) = isa.neon() {
            paths.push(("neon", 4, Box::new(move |x| neon::exp_in_place(t, x)), Box::new(move |x| neon::lanes(t, x))));
        }
        let _ = isa;
        paths
    }

    #[test]
    fn the_paths_agree_at_edge_cases() {
        let xs = edge_cases();
        let want: Vec<f32> = xs.iter().map(|&x| exp(x)).collect();
        let mut portable = xs.clone();
        exp_in_place_portable(&mut portable);
        assert_eq!(bits(&portable), bits(&want));
        for (name, lanes, exp_in_place, _) in vector_paths() {
            // Every edge case in each of the lanes.
            for shift in 0..lanes {
                let mut values = xs[shift..].to_vec();
                exp_in_place(&mut values);
                assert_eq!(bits(&values), bits(&want[shift..]), "{name}, lane shift {shift}");
            }
        }
        let mut all = xs.clone();
        exp_in_place(&mut all);
        assert_eq!(bits(&all), bits(&want));
    }

    /// The lanes functions of every instruction set on the edge cases and a sweep of bit
    /// patterns: `exp` everywhere, `exp_nonpositive` on its domain (`≤ 0` or `−∞`).
    #[test]
    fn the_lanes_functions_agree_with_the_twin() {
        let mut xs = edge_cases();
        xs.extend((0..u32::MAX / 4099).map(|i| f32::from_bits(i * 4099 + (i & 7))));
        xs.truncate(xs.len() / 16 * 16);
        let domain: Vec<f32> = xs.iter().map(|&x| if x.is_nan() { f32::NEG_INFINITY } else { -x.abs() }).collect();
        let want: Vec<f32> = xs.iter().map(|&x| exp(x)).collect();
        let want_nonpositive: Vec<f32> = domain.iter().map(|&x| exp(x)).collect();
        for (name, _, _, lanes) in vector_paths() {
            let (all, _) = lanes(&xs);
            let (_, nonpositive) = lanes(&domain);
            assert_eq!(bits(&all), bits(&want), "{name}: exp");
            assert_eq!(bits(&nonpositive), bits(&want_nonpositive), "{name}: exp_nonpositive");
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
