//! One axis's weights regrouped for the SIMD kernels: consecutive taps paired, every weight
//! split into small parts that 16-bit multiplies take exactly.
//!
//! Pillow accumulates `Σ pixel * k` in int32 with 22-bit signed weights `k` (`|k| <= 2^22`).
//! The kernels use `pmaddwd` (i16 x i16 products, adjacent pairs summed into i32), two
//! consecutive taps sharing one instruction, so each weight is split:
//!
//! - wide split (every kernel): `k = hi * 2^15 + lo` with `lo` in `0..2^15` and `|hi| <= 128`,
//!   both taken by `pmaddwd`;
//! - narrow split (AVX2, when the bound below holds): `k = hi * 2^16 + lo` with `lo` the signed
//!   low 16 bits and `|hi| <= 64`, `lo` taken by `pmaddwd` and `hi` by `pmaddubsw` (u8 x i8,
//!   adjacent pairs summed into i16: at most `255 * 128`, no saturation), the `hi` sums
//!   accumulated in i16, which is exact when `255 * Σ|hi|` fits in i16 for every output.
//!
//! `Σ p*k = 2^s * Σ p*hi + Σ p*lo` holds in wrapping i32 arithmetic and the true sum fits in
//! i32 (Pillow's own accumulator), so either way the result is Pillow's to the bit.

use super::coefficients::Coefficients;

/// The weights of one axis, paired.
#[derive(Debug, Clone)]
pub struct PairedTaps {
    /// The weights as Pillow computed them.
    pub coeffs: Coefficients,
    /// Output `i` uses pairs `offset[i]..offset[i + 1]`.
    offset: Vec<usize>,
    /// Wide split: `(lo_t, lo_(t+1))` of each pair as two i16 lanes of one i32 (`lo_t` in the
    /// low half); a lone last tap is paired with a zero weight.
    lo: Vec<i32>,
    /// Wide split: `(hi_t, hi_(t+1))`, laid out like `lo`.
    hi: Vec<i32>,
    /// Narrow split, `Some` when every output's `255 * Σ|hi|` fits in i16: `(lo_t, lo_(t+1))`
    /// as i16 lanes of an i32, and `(hi_t, hi_(t+1))` as i8 lanes of an i16.
    narrow: Option<(Vec<i32>, Vec<i16>)>,
}

impl PairedTaps {
    /// Pairs the taps of every output of `coeffs`.
    pub fn new(coeffs: Coefficients) -> Self {
        let outputs = coeffs.start.len();
        let mut offset = Vec::with_capacity(outputs + 1);
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        let (mut lo16, mut hi8) = (Vec::new(), Vec::new());
        let mut narrow = true;
        for i in 0..outputs {
            offset.push(lo.len());
            let k = coeffs.of(i);
            let hi_sum: i32 = k.iter().map(|&k| i32::from(split_narrow(k).1).abs()).sum();
            narrow &= 255 * hi_sum <= i32::from(i16::MAX);
            for pair in k.chunks(2) {
                let (k0, k1) = (pair[0], pair.get(1).copied().unwrap_or(0));
                let ((l0, h0), (l1, h1)) = (split_wide(k0), split_wide(k1));
                lo.push(i16_lanes(l0, l1));
                hi.push(i16_lanes(h0, h1));
                let ((l0, h0), (l1, h1)) = (split_narrow(k0), split_narrow(k1));
                lo16.push(i16_lanes(l0, l1));
                hi8.push(i16::from_le_bytes([h0 as u8, h1 as u8]));
            }
        }
        offset.push(lo.len());
        let narrow = narrow.then_some((lo16, hi8));
        PairedTaps { coeffs, offset, lo, hi, narrow }
    }

    /// Number of outputs.
    pub fn outputs(&self) -> usize {
        self.coeffs.start.len()
    }

    /// First input index of output `i`.
    #[inline(always)]
    pub fn start(&self, i: usize) -> usize {
        self.coeffs.start[i]
    }

    /// Number of inputs (taps) of output `i`.
    #[inline(always)]
    pub fn len(&self, i: usize) -> usize {
        self.coeffs.len[i]
    }

    /// The wide split's `(lo, hi)` pair words of output `i`.
    #[inline(always)]
    pub fn pairs(&self, i: usize) -> (&[i32], &[i32]) {
        let range = self.offset[i]..self.offset[i + 1];
        (&self.lo[range.clone()], &self.hi[range])
    }

    /// The narrow split's `(lo, hi)` pair words of output `i`, when this axis has one.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    #[inline(always)]
    pub fn narrow_pairs(&self, i: usize) -> Option<(&[i32], &[i16])> {
        let range = self.offset[i]..self.offset[i + 1];
        self.narrow.as_ref().map(|(lo, hi)| (&lo[range.clone()], &hi[range]))
    }

    /// Whether [`narrow_pairs`](Self::narrow_pairs) is available.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub fn is_narrow(&self) -> bool {
        self.narrow.is_some()
    }
}

/// `k = hi * 2^15 + lo`, `lo` in `0..2^15`; `|k| <= 2^22` so `|hi| <= 128`.
fn split_wide(k: i32) -> (i16, i16) {
    ((k & 0x7fff) as i16, (k >> 15) as i16)
}

/// `k = hi * 2^16 + lo`, `lo` the signed low 16 bits; `|k| <= 2^22` so `|hi| <= 64`.
fn split_narrow(k: i32) -> (i16, i8) {
    let lo = k as i16;
    (lo, ((k - i32::from(lo)) >> 16) as i8)
}

/// Two i16 as the lanes of one i32, `first` in the low (first in memory) half.
fn i16_lanes(first: i16, second: i16) -> i32 {
    (u32::from(first as u16) | (u32::from(second as u16) << 16)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_splits_recombine_to_the_weight() {
        for k in (-(1 << 22)..=(1 << 22)).step_by(997).chain([-(1 << 22), -1, 0, 1, (1 << 22) - 1, 1 << 22]) {
            let (lo, hi) = split_wide(k);
            assert!((0..1 << 15).contains(&i32::from(lo)) && i32::from(hi).abs() <= 128, "{k}");
            assert_eq!(i32::from(hi) * (1 << 15) + i32::from(lo), k);
            let (lo, hi) = split_narrow(k);
            assert!(i32::from(hi).abs() <= 64, "{k}");
            assert_eq!(i32::from(hi) * (1 << 16) + i32::from(lo), k);
        }
    }

    #[test]
    fn the_benchmarked_scales_have_the_narrow_split() {
        let taps = |i, o| PairedTaps::new(Coefficients::bicubic(i, o).expect("coefficients"));
        for (i, o) in [(4000, 912), (3000, 672), (4000, 1824), (3000, 1344), (1024, 912), (768, 1344), (100, 7)] {
            assert!(taps(i, o).is_narrow(), "{i} -> {o}");
        }
    }
}
