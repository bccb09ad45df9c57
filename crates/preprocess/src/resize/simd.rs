//! The exact multiply-add both passes share, on 16 lanes of u8 at a time.
//!
//! Pillow accumulates `Σ pixel * k` in int32 with 22-bit signed weights `k`. SSE2 has no
//! 32-bit multiply, but it has `pmaddwd` (i16 x i16 products, adjacent pairs summed into i32):
//! each weight is split as `k = hi * 2^15 + lo` with `lo` in `0..2^15` and `hi` small, both
//! i16, and two taps are paired so that one `pmaddwd` computes `p * lo_t + q * lo_(t+1)` for
//! four lanes. `Σ p*k = 2^15 * Σ p*hi + Σ p*lo` holds in wrapping i32 arithmetic, and the true
//! sum fits in i32 (Pillow's own accumulator), so the result is Pillow's to the bit.

use super::coefficients::{HALF, PRECISION_BITS};
use wide::{i16x8, i32x4, i32x8, u8x16};

/// Two taps' weights, split and broadcast for `pmaddwd`: `(lo_t, lo_t+1)` and `(hi_t, hi_t+1)`
/// repeated over four lane pairs. A lone last tap is paired with a zero weight.
#[derive(Debug, Clone, Copy)]
pub struct TapPair {
    lo: i16x8,
    hi: i16x8,
}

impl TapPair {
    /// The pair for weights `k0` and `k1`.
    pub fn new(k0: i32, k1: i32) -> TapPair {
        let (l0, h0) = split(k0);
        let (l1, h1) = split(k1);
        TapPair { lo: i16x8::from([l0, l1, l0, l1, l0, l1, l0, l1]), hi: i16x8::from([h0, h1, h0, h1, h0, h1, h0, h1]) }
    }

    /// The pairs of consecutive weights of `k`, the last one alone if `k` has odd length.
    pub fn pairs(k: &[i32]) -> impl Iterator<Item = TapPair> + '_ {
        k.chunks(2).map(|c| TapPair::new(c[0], c.get(1).copied().unwrap_or(0)))
    }
}

/// `k = hi * 2^15 + lo`, `lo` in `0..2^15`; `|k| < 2^23` so `hi` fits in i16.
fn split(k: i32) -> (i16, i16) {
    ((k & 0x7fff) as i16, (k >> 15) as i16)
}

/// Sixteen lanes of split accumulators.
#[derive(Debug, Clone, Copy)]
pub struct Acc16 {
    lo: [i32x4; 4],
    hi: [i32x4; 4],
}

impl Acc16 {
    /// Zero sums.
    pub fn new() -> Acc16 {
        Acc16 { lo: [i32x4::ZERO; 4], hi: [i32x4::ZERO; 4] }
    }

    /// Adds `a * k_t + b * k_(t+1)` lane by lane (`a`, `b`: 16 pixels of two taps).
    #[inline(always)]
    pub fn add(&mut self, a: u8x16, b: u8x16, k: TapPair) {
        let low = u8x16::unpack_low(a, b);
        let high = u8x16::unpack_high(a, b);
        let v = [
            i16x8::from_u8x16_low(low),
            i16x8::from_u8x16_high(low),
            i16x8::from_u8x16_low(high),
            i16x8::from_u8x16_high(high),
        ];
        for ((lo, hi), v) in self.lo.iter_mut().zip(&mut self.hi).zip(v) {
            *lo += v.dot(k.lo);
            *hi += v.dot(k.hi);
        }
    }

    /// Pillow's `clip8(2^21 + Σ p*k)` of the sixteen lanes.
    #[inline(always)]
    pub fn finish(&self) -> [u8; 16] {
        let half = i32x4::splat(HALF);
        let s = |i: usize| (((self.hi[i] << 15u32) + self.lo[i] + half) >> PRECISION_BITS).to_array();
        let pack = |a: [i32; 4], b: [i32; 4]| {
            i16x8::from_i32x8_saturate(i32x8::new([a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]]))
        };
        // Values are within ±2^9 after the shift: the i16 pack is exact, the u8 pack clamps to
        // 0..=255 like Pillow's `clip8`.
        u8x16::narrow_i16x8(pack(s(0), s(1)), pack(s(2), s(3))).to_array()
    }
}

/// Sixteen bytes of `s` from `at` as a vector.
#[inline(always)]
pub fn load16(s: &[u8], at: usize) -> u8x16 {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&s[at..at + 16]);
    u8x16::from(bytes)
}
