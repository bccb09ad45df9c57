//! When an FMA gives the bits of a separate multiply and add: [`Magnitudes`] of packed
//! operands and [`products_are_exact`].
//!
//! `fma(a, b, acc)` rounds `a·b + acc` once; MLX rounds `a·b` first. The two agree whenever
//! `a·b` is exact in `f32`: for bf16 values (8 significant bits each, 16 in the product) that
//! is every product in the normal range, `[2^-126, 2^128)`, and every product that is zero,
//! infinite or NaN (those propagate the same way through both). The micro-kernel may use FMA
//! for a block of the product when both operands hold bf16 values and their magnitudes keep
//! every nonzero finite product in that range.

use crate::cpu::Isa;

/// The largest and the smallest nonzero magnitude among the finite values of a set (infinities,
/// NaNs and zeros are ignored), or bounds of them (`max` at least the largest, `min` at most
/// the smallest), which serve [`products_are_exact`] as well.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Magnitudes {
    /// Largest finite `|x|` (0 if there is none).
    pub(crate) max: f32,
    /// Smallest finite nonzero `|x|` (`+∞` if there is none).
    pub(crate) min: f32,
}

impl Magnitudes {
    /// No values.
    pub(crate) const EMPTY: Magnitudes = Magnitudes { max: 0.0, min: f32::INFINITY };

    /// Any values (bounds that make no product provably exact unless the other side is empty).
    pub(crate) const UNBOUNDED: Magnitudes = Magnitudes { max: f32::INFINITY, min: 0.0 };

    /// Folds one value in.
    #[cfg(test)]
    pub(crate) fn add(&mut self, x: f32) {
        let magnitude = x.abs();
        if magnitude < f32::INFINITY {
            self.max = self.max.max(magnitude);
            if magnitude > 0.0 {
                self.min = self.min.min(magnitude);
            }
        }
    }

    /// The magnitudes of `values`, with the vector code of `isa` where it has some.
    pub(crate) fn of(values: &[f32], isa: Isa) -> Magnitudes {
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = isa.avx2() {
            return avx2::of(avx2, values);
        }
        let _ = isa;
        Self::of_portable(values)
    }

    /// [`Magnitudes::of`] one value at a time, on the bits: a finite magnitude's bits are below
    /// `+∞`'s, and ordered as the magnitudes are.
    fn of_portable(values: &[f32]) -> Magnitudes {
        let (mut max, mut min) = (0u32, INFINITY_BITS);
        for &x in values {
            let bits = x.to_bits() & !SIGN;
            if bits < INFINITY_BITS {
                max = max.max(bits);
                if bits != 0 {
                    min = min.min(bits);
                }
            }
        }
        Magnitudes { max: f32::from_bits(max), min: f32::from_bits(min) }
    }

    /// The magnitudes of both sets.
    #[inline]
    pub(crate) fn merge(self, other: Magnitudes) -> Magnitudes {
        Magnitudes { max: self.max.max(other.max), min: self.min.min(other.min) }
    }
}

const SIGN: u32 = 0x8000_0000;
const INFINITY_BITS: u32 = 0x7F80_0000;

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use super::{INFINITY_BITS, Magnitudes, SIGN};
    use std::arch::x86_64::*;

    /// The running magnitudes of a stream of 8-lane vectors (unsigned integer max and min on
    /// the bits of each lane).
    #[derive(Clone, Copy)]
    pub(crate) struct Lanes {
        max: __m256i,
        min: __m256i,
    }

    impl Lanes {
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        pub(crate) fn new() -> Lanes {
            Lanes { max: _mm256_setzero_si256(), min: _mm256_set1_epi32(INFINITY_BITS as i32) }
        }

        /// Folds in the 8 values of `v`.
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        pub(crate) fn fold(&mut self, v: __m256) {
            let infinity = _mm256_set1_epi32(INFINITY_BITS as i32);
            let bits = _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(!SIGN as i32));
            // Finite: below +inf's bits (magnitudes are below 2^31, so a signed compare is exact).
            let finite = _mm256_cmpgt_epi32(infinity, bits);
            let zero = _mm256_cmpeq_epi32(bits, _mm256_setzero_si256());
            self.max = _mm256_max_epu32(self.max, _mm256_and_si256(bits, finite));
            self.min =
                _mm256_min_epu32(self.min, _mm256_blendv_epi8(infinity, bits, _mm256_andnot_si256(zero, finite)));
        }

        /// The magnitudes of every value folded in.
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        pub(crate) fn finish(self) -> Magnitudes {
            let (mut max_lanes, mut min_lanes) = ([0u32; 8], [0u32; 8]);
            // SAFETY: each array holds 8 lanes of 32 bits.
            unsafe {
                _mm256_storeu_si256(max_lanes.as_mut_ptr().cast(), self.max);
                _mm256_storeu_si256(min_lanes.as_mut_ptr().cast(), self.min);
            }
            Magnitudes {
                max: f32::from_bits(max_lanes.into_iter().max().unwrap_or(0)),
                min: f32::from_bits(min_lanes.into_iter().min().unwrap_or(INFINITY_BITS)),
            }
        }
    }

    crate::cpu::target_entry! {
        Avx2;
        /// [`of_tf`] behind the token that proves its target features.
        pub(super) fn of(values: &[f32]) -> Magnitudes = of_tf;
    }

    /// [`Magnitudes::of`] eight values at a time.
    #[target_feature(enable = "avx2,fma")]
    fn of_tf(values: &[f32]) -> Magnitudes {
        let mut lanes = Lanes::new();
        let mut chunks = values.chunks_exact(8);
        for chunk in &mut chunks {
            // SAFETY: `chunk` holds 8 floats.
            lanes.fold(unsafe { _mm256_loadu_ps(chunk.as_ptr()) });
        }
        lanes.finish().merge(Magnitudes::of_portable(chunks.remainder()))
    }
}

/// Whether every product of a value of `a` with a value of `b`, both sets of bf16 values, is
/// exact in `f32` (see the module docs).
pub(crate) fn products_are_exact(a: Magnitudes, b: Magnitudes) -> bool {
    if a.max == 0.0 || b.max == 0.0 {
        // One side has no nonzero finite value: every product is zero, infinite or NaN.
        return true;
    }
    let largest = f64::from(a.max) * f64::from(b.max);
    let smallest = f64::from(a.min) * f64::from(b.min);
    largest < 2f64.powi(128) && smallest >= 2f64.powi(-126)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bf16_from_f32;

    fn magnitudes(values: &[f32]) -> Magnitudes {
        let mut m = Magnitudes::EMPTY;
        for &x in values {
            m.add(x);
        }
        assert_eq!(m, Magnitudes::of(values, crate::cpu::isa()));
        assert_eq!(m, Magnitudes::of_portable(values));
        m
    }

    #[test]
    fn the_vector_scan_matches_the_scalar_one() {
        let values: Vec<f32> = (0..1000u32)
            .map(|i| match i % 97 {
                0 => f32::NAN,
                1 => f32::NEG_INFINITY,
                2 => -0.0,
                3 => 1e-42,
                _ => (i.wrapping_mul(2_654_435_761) >> 7) as f32 * 1e-7 - 3.0,
            })
            .collect();
        for len in [0, 1, 7, 8, 9, 100, 1000] {
            magnitudes(&values[..len]);
        }
    }

    #[test]
    fn products_in_the_normal_range_are_exact_and_only_those() {
        let ordinary = magnitudes(&[-3.0, 0.0, 1e-3, 250.0, f32::NAN, f32::INFINITY]);
        assert_eq!(ordinary, Magnitudes { max: 250.0, min: 1e-3 });
        assert!(products_are_exact(ordinary, ordinary));
        assert!(products_are_exact(magnitudes(&[0.0, f32::NAN]), magnitudes(&[1e-45, 3e38])));
        // 2^-63 · 2^-64 = 2^-127 is subnormal: rounding is possible.
        assert!(!products_are_exact(magnitudes(&[2f32.powi(-63)]), magnitudes(&[2f32.powi(-64), 1.0])));
        assert!(products_are_exact(magnitudes(&[2f32.powi(-63)]), magnitudes(&[2f32.powi(-63), 1.0])));
        // 2^64 · 2^64 = 2^128 overflows.
        assert!(!products_are_exact(magnitudes(&[2f32.powi(64)]), magnitudes(&[2f32.powi(64)])));
        // Every bf16 product in range is exact: check one with all 8 significant bits set.
        let x = bf16_from_f32(1.9921875).to_f32();
        let product = f64::from(x) * f64::from(x);
        assert_eq!(f64::from(x * x), product);
    }
}
