//! The portable kernel of both passes: 16 lanes of u8 at a time with `wide` (SSE2 on x86-64,
//! NEON on aarch64), the split multiply-add of [`taps`](super::taps).

use super::coefficients::{HALF, PRECISION_BITS, clip8};
use super::taps::PairedTaps;
use wide::{i16x8, i32x4, i32x8, u8x16};

/// Rows per horizontal tile: 5 rows x 3 channels fill 15 of a vector's 16 lanes.
pub const TILE: usize = 5;
const LANES: usize = 16;

/// Sixteen lanes of split accumulators.
#[derive(Clone, Copy)]
struct Acc16 {
    lo: [i32x4; 4],
    hi: [i32x4; 4],
}

impl Acc16 {
    fn new() -> Acc16 {
        Acc16 { lo: [i32x4::ZERO; 4], hi: [i32x4::ZERO; 4] }
    }

    /// Adds `a * k_t + b * k_(t+1)` lane by lane (`a`, `b`: 16 pixels of two taps; `lo`, `hi`:
    /// the pair's words).
    #[inline(always)]
    fn add(&mut self, a: u8x16, b: u8x16, lo: i32, hi: i32) {
        let klo: i16x8 = pulp::cast(i32x4::splat(lo));
        let khi: i16x8 = pulp::cast(i32x4::splat(hi));
        let low = u8x16::unpack_low(a, b);
        let high = u8x16::unpack_high(a, b);
        let v = [
            i16x8::from_u8x16_low(low),
            i16x8::from_u8x16_high(low),
            i16x8::from_u8x16_low(high),
            i16x8::from_u8x16_high(high),
        ];
        for ((acc_lo, acc_hi), v) in self.lo.iter_mut().zip(&mut self.hi).zip(v) {
            *acc_lo += v.dot(klo);
            *acc_hi += v.dot(khi);
        }
    }

    /// Pillow's `clip8(2^21 + Σ p*k)` of the sixteen lanes.
    #[inline(always)]
    fn finish(&self) -> [u8; 16] {
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

#[inline(always)]
fn load16(s: &[u8], at: usize) -> u8x16 {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&s[at..at + 16]);
    u8x16::from(bytes)
}

/// Resamples the rows of `src` (`in_w` RGB pixels each) horizontally into `out` (one row of
/// `taps.outputs()` pixels per source row). Rows are taken five at a time and transposed into
/// `columns` so that one source column of the five rows (15 bytes, padded to 16) is one vector.
pub fn horizontal_rows(src: &[u8], in_w: usize, taps: &PairedTaps, columns: &mut Vec<u8>, out: &mut [u8]) {
    let out_stride = taps.outputs() * 3;
    if out_stride == 0 || in_w == 0 {
        return;
    }
    columns.resize(in_w * LANES, 0);
    let in_stride = in_w * 3;
    for (tile, out_tile) in out.chunks_mut(out_stride * TILE).enumerate() {
        let rows = out_tile.len() / out_stride;
        let tile_src = &src[tile * TILE * in_stride..][..rows * in_stride];
        // Column by column, so that the writes are sequential.
        for (x, column) in columns.chunks_exact_mut(LANES).enumerate() {
            for (r, line) in tile_src.chunks_exact(in_stride).enumerate() {
                column[r * 3..r * 3 + 3].copy_from_slice(&line[3 * x..3 * x + 3]);
            }
        }
        for xx in 0..taps.outputs() {
            let (xmin, len) = (taps.start(xx), taps.len(xx));
            let (lo, hi) = taps.pairs(xx);
            let mut acc = Acc16::new();
            for (p, (&lo, &hi)) in lo.iter().zip(hi).enumerate() {
                let x = xmin + 2 * p;
                let a = load16(columns, x * LANES);
                let b = if 2 * p + 1 < len { load16(columns, (x + 1) * LANES) } else { a };
                acc.add(a, b, lo, hi);
            }
            let lanes = acc.finish();
            for r in 0..rows {
                let at = r * out_stride + xx * 3;
                out_tile[at..at + 3].copy_from_slice(&lanes[r * 3..r * 3 + 3]);
            }
        }
    }
}

/// Output row `y` of the vertical pass: tap `t` reads the row `src[offsets[t]..][..out.len()]`.
pub fn vertical_row(src: &[u8], offsets: &[usize], y: usize, taps: &PairedTaps, out: &mut [u8]) {
    let row_len = out.len();
    let (lo, hi) = taps.pairs(y);
    let blocks = row_len / LANES;
    for b in 0..blocks {
        let at = b * LANES;
        let mut acc = Acc16::new();
        for (p, (&lo, &hi)) in lo.iter().zip(hi).enumerate() {
            let a = load16(src, offsets[2 * p] + at);
            let second = offsets.get(2 * p + 1).map_or(a, |&o| load16(src, o + at));
            acc.add(a, second, lo, hi);
        }
        out[at..at + LANES].copy_from_slice(&acc.finish());
    }
    let k = taps.coeffs.of(y);
    for (x, o) in out.iter_mut().enumerate().skip(blocks * LANES) {
        let mut ss = HALF;
        for (&offset, &kk) in offsets.iter().zip(k) {
            ss += i32::from(src[offset + x]) * kk;
        }
        *o = clip8(ss);
    }
}
