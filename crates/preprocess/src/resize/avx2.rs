//! The AVX2 kernel of both passes: Pillow's integer arithmetic on 32 lanes of u8 at a time.
//!
//! AVX2's unpack, `pmaddwd`/`pmaddubsw` and pack instructions work within each 128-bit half, so
//! every step is an SSE sequence on two halves at once and the bytes come out in their input
//! order. With the [`taps`](super::taps) narrow split (every axis a budget resize produces) the
//! weights' high parts go through `pmaddubsw` straight from the bytes, into i16 sums; otherwise
//! both parts go through `pmaddwd` like the [`portable`](super::portable) kernel.
//!
//! The horizontal pass works on tiles of 10 rows transposed so that one source column of the 10
//! rows is one vector; the transpositions both ways are byte shuffles, four pixels at a time.
//!
//! Entered through [`pulp`]'s runtime-checked `V3` token, so the rest of the crate stays free of
//! `unsafe`; everything below is `#[inline(always)]` and closure-free around intrinsics, so that
//! it is compiled inside `V3::vectorize` with the AVX2 target features.

use super::coefficients::{HALF, PRECISION_BITS, clip8};
use super::taps::PairedTaps;
use core::arch::x86_64::{__m128i, __m256i};
use pulp::x86::V3;

/// Rows per horizontal tile: two groups of 5 rows x 3 channels, one per 128-bit half (15 of
/// its 16 lanes each).
pub const TILE: usize = 10;
const LANES: usize = 32;
/// Rows per 128-bit half of a transposed column.
const HALF_ROWS: usize = 5;

/// [`horizontal_lanes`] compiled with AVX2 enabled, with the narrow split when `narrow` and
/// the axis has it.
pub fn horizontal_rows(
    simd: V3,
    narrow: bool,
    src: &[u8],
    in_w: usize,
    taps: &PairedTaps,
    scratch: &mut Vec<u8>,
    out: &mut [u8],
) {
    simd.vectorize(Horizontal { simd, narrow, src, in_w, taps, scratch, out })
}

/// [`vertical_lanes`] compiled with AVX2 enabled, with the narrow split when `narrow` and the
/// axis has it.
pub fn vertical_row(
    simd: V3,
    narrow: bool,
    src: &[u8],
    offsets: &[usize],
    y: usize,
    taps: &PairedTaps,
    out: &mut [u8],
) {
    simd.vectorize(Vertical { simd, narrow, src, offsets, y, taps, out })
}

// The calls as values for `V3::vectorize`, whose `#[inline(always)]` `call` is inlined into its
// target-feature function (a closure might not be, and would then run without AVX2).
struct Horizontal<'a> {
    simd: V3,
    narrow: bool,
    src: &'a [u8],
    in_w: usize,
    taps: &'a PairedTaps,
    scratch: &'a mut Vec<u8>,
    out: &'a mut [u8],
}

impl pulp::NullaryFnOnce for Horizontal<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        match self.narrow && self.taps.is_narrow() {
            true => horizontal_lanes::<Narrow>(self.simd, self.src, self.in_w, self.taps, self.scratch, self.out),
            false => horizontal_lanes::<Wide>(self.simd, self.src, self.in_w, self.taps, self.scratch, self.out),
        }
    }
}

struct Vertical<'a> {
    simd: V3,
    narrow: bool,
    src: &'a [u8],
    offsets: &'a [usize],
    y: usize,
    taps: &'a PairedTaps,
    out: &'a mut [u8],
}

impl pulp::NullaryFnOnce for Vertical<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        match self.narrow && self.taps.is_narrow() {
            true => vertical_lanes::<Narrow>(self.simd, self.src, self.offsets, self.y, self.taps, self.out),
            false => vertical_lanes::<Wide>(self.simd, self.src, self.offsets, self.y, self.taps, self.out),
        }
    }
}

/// Thirty-two lanes of Pillow's accumulator `Σ p*k` for one output, fed a pair of taps at a
/// time (see [`taps`](super::taps) for the splits).
trait Accumulator: Copy {
    /// The `hi` word of a pair.
    type Hi: Copy;
    /// Sums at Pillow's rounding term `2^21`.
    fn new(simd: V3) -> Self;
    /// The `(lo, hi)` words of output `i`'s pairs.
    fn words(taps: &PairedTaps, i: usize) -> (&[i32], &[Self::Hi]);
    /// Adds `a * k_t + b * k_(t+1)` lane by lane for the pair with words `lo`, `hi` (`a`, `b`:
    /// 32 bytes of the two taps).
    fn add(&mut self, simd: V3, a: __m256i, b: __m256i, lo: i32, hi: Self::Hi);
    /// Pillow's accumulators `2^21 + Σ p*k` (the `lo` sums start at the rounding term), as i32
    /// lanes holding bytes `4j..4j + 4` of each 128-bit half.
    fn sums(&self, simd: V3) -> [__m256i; 4];
}

/// The wide split: `lo` and `hi` both through `pmaddwd`, in i32.
#[derive(Clone, Copy)]
struct Wide {
    lo: [__m256i; 4],
    hi: [__m256i; 4],
}

impl Accumulator for Wide {
    type Hi = i32;

    #[inline(always)]
    fn new(simd: V3) -> Wide {
        let zero = simd.avx._mm256_setzero_si256();
        Wide { lo: [simd.avx._mm256_set1_epi32(HALF); 4], hi: [zero; 4] }
    }

    #[inline(always)]
    fn words(taps: &PairedTaps, i: usize) -> (&[i32], &[i32]) {
        taps.pairs(i)
    }

    #[inline(always)]
    fn add(&mut self, simd: V3, a: __m256i, b: __m256i, lo: i32, hi: i32) {
        let x = simd.avx2;
        let klo = simd.avx._mm256_set1_epi32(lo);
        let khi = simd.avx._mm256_set1_epi32(hi);
        for ((lo, hi), v) in self.lo.iter_mut().zip(&mut self.hi).zip(widen(simd, a, b)) {
            *lo = x._mm256_add_epi32(*lo, x._mm256_madd_epi16(v, klo));
            *hi = x._mm256_add_epi32(*hi, x._mm256_madd_epi16(v, khi));
        }
    }

    #[inline(always)]
    fn sums(&self, simd: V3) -> [__m256i; 4] {
        let x = simd.avx2;
        let mut sums = self.lo;
        for (sum, &hi) in sums.iter_mut().zip(&self.hi) {
            *sum = x._mm256_add_epi32(x._mm256_slli_epi32::<15>(hi), *sum);
        }
        sums
    }
}

/// The narrow split: `lo` through `pmaddwd` in i32, `hi` through `pmaddubsw` on the bytes
/// themselves, in i16.
#[derive(Clone, Copy)]
struct Narrow {
    lo: [__m256i; 4],
    /// i16 lanes for bytes `0..8` and `8..16` of each 128-bit half.
    hi: [__m256i; 2],
}

impl Accumulator for Narrow {
    type Hi = i16;

    #[inline(always)]
    fn new(simd: V3) -> Narrow {
        let zero = simd.avx._mm256_setzero_si256();
        Narrow { lo: [simd.avx._mm256_set1_epi32(HALF); 4], hi: [zero; 2] }
    }

    /// Empty when the axis has no narrow split (callers check [`PairedTaps::is_narrow`]).
    #[inline(always)]
    fn words(taps: &PairedTaps, i: usize) -> (&[i32], &[i16]) {
        taps.narrow_pairs(i).unwrap_or((&[], &[]))
    }

    #[inline(always)]
    fn add(&mut self, simd: V3, a: __m256i, b: __m256i, lo: i32, hi: i16) {
        let x = simd.avx2;
        let klo = simd.avx._mm256_set1_epi32(lo);
        let khi = simd.avx._mm256_set1_epi16(hi);
        let low = x._mm256_unpacklo_epi8(a, b);
        let high = x._mm256_unpackhi_epi8(a, b);
        self.hi[0] = x._mm256_add_epi16(self.hi[0], x._mm256_maddubs_epi16(low, khi));
        self.hi[1] = x._mm256_add_epi16(self.hi[1], x._mm256_maddubs_epi16(high, khi));
        let zero = simd.avx._mm256_setzero_si256();
        let v = [
            x._mm256_unpacklo_epi8(low, zero),
            x._mm256_unpackhi_epi8(low, zero),
            x._mm256_unpacklo_epi8(high, zero),
            x._mm256_unpackhi_epi8(high, zero),
        ];
        for (lo, v) in self.lo.iter_mut().zip(v) {
            *lo = x._mm256_add_epi32(*lo, x._mm256_madd_epi16(v, klo));
        }
    }

    #[inline(always)]
    fn sums(&self, simd: V3) -> [__m256i; 4] {
        let x = simd.avx2;
        let zero = simd.avx._mm256_setzero_si256();
        // `hi * 2^16` as i32: the i16 in the upper half of each lane, zeros below.
        let hi = [
            x._mm256_unpacklo_epi16(zero, self.hi[0]),
            x._mm256_unpackhi_epi16(zero, self.hi[0]),
            x._mm256_unpacklo_epi16(zero, self.hi[1]),
            x._mm256_unpackhi_epi16(zero, self.hi[1]),
        ];
        let mut sums = self.lo;
        for (sum, hi) in sums.iter_mut().zip(hi) {
            *sum = x._mm256_add_epi32(hi, *sum);
        }
        sums
    }
}

/// The bytes of two taps interleaved and zero-extended to i16 pairs `(a_j, b_j)`: bytes `0..4`,
/// `4..8`, `8..12`, `12..16` of each 128-bit half.
#[inline(always)]
fn widen(simd: V3, a: __m256i, b: __m256i) -> [__m256i; 4] {
    let x = simd.avx2;
    let zero = simd.avx._mm256_setzero_si256();
    let low = x._mm256_unpacklo_epi8(a, b);
    let high = x._mm256_unpackhi_epi8(a, b);
    [
        x._mm256_unpacklo_epi8(low, zero),
        x._mm256_unpackhi_epi8(low, zero),
        x._mm256_unpacklo_epi8(high, zero),
        x._mm256_unpackhi_epi8(high, zero),
    ]
}

/// Pillow's `clip8(2^21 + Σ p*k)` of the 32 lanes, in lane order.
#[inline(always)]
fn finish<A: Accumulator>(simd: V3, acc: &A) -> [u8; 32] {
    let x = simd.avx2;
    let mut sums = acc.sums(simd);
    for sum in &mut sums {
        *sum = x._mm256_srai_epi32::<{ PRECISION_BITS as i32 }>(*sum);
    }
    // Within ±2^9 after the shift: the i16 pack is exact, the u8 pack clamps like `clip8`.
    let words = [x._mm256_packs_epi32(sums[0], sums[1]), x._mm256_packs_epi32(sums[2], sums[3])];
    pulp::cast(x._mm256_packus_epi16(words[0], words[1]))
}

#[inline(always)]
fn load32(s: &[u8], at: usize) -> __m256i {
    let mut bytes = [0u8; 32];
    bytes.copy_from_slice(&s[at..at + 32]);
    pulp::cast(bytes)
}

/// Resamples the rows of `src` (`in_w` RGB pixels each) horizontally into `out` (one row of
/// `taps.outputs()` pixels per source row). Rows are taken ten at a time and transposed into
/// columns (in `scratch`): byte `h * 16 + r * 3 + c` of column `x` is channel `c` of pixel `x` of the tile's
/// row `5h + r`.
#[inline(always)]
fn horizontal_lanes<A: Accumulator>(
    simd: V3,
    src: &[u8],
    in_w: usize,
    taps: &PairedTaps,
    scratch: &mut Vec<u8>,
    out: &mut [u8],
) {
    let out_w = taps.outputs();
    let out_stride = out_w * 3;
    if out_stride == 0 || in_w == 0 {
        return;
    }
    let in_stride = in_w * 3;
    // The tile's source columns, then its output columns (same layout, `out_w` of them).
    scratch.resize((in_w + out_w) * LANES, 0);
    let (columns, outputs) = scratch.split_at_mut(in_w * LANES);
    for (tile, out_tile) in out.chunks_mut(out_stride * TILE).enumerate() {
        transpose_tile(
            simd,
            &src[tile * TILE * in_stride..][..out_tile.len() / out_stride * in_stride],
            in_stride,
            columns,
        );
        for (xx, output) in outputs.chunks_exact_mut(LANES).enumerate() {
            let (xmin, len) = (taps.start(xx), taps.len(xx));
            let (lo, hi) = A::words(taps, xx);
            let mut acc = A::new(simd);
            for (p, (&lo, &hi)) in lo.iter().zip(hi).enumerate() {
                let x = xmin + 2 * p;
                let a = load32(columns, x * LANES);
                let b = if 2 * p + 1 < len { load32(columns, (x + 1) * LANES) } else { a };
                acc.add(simd, a, b, lo, hi);
            }
            output.copy_from_slice(&finish(simd, &acc));
        }
        untranspose_tile(simd, outputs, out_stride, out_tile);
    }
}

/// The inverse of [`transpose_tile`] for the outputs: `columns` (one 32-byte column per output
/// pixel) back to the rows of `out` (as many as it holds, up to [`TILE`]).
///
/// Four pixels of a half at a time: each column's rows 0..4 spread to one row per 32-bit lane, a
/// 4x4 transpose, each row packed to 12 bytes and stored with a 16-byte store (its last 4 bytes
/// land on the next pixels, written after); row 4 gathered from the four columns' bytes 12..15.
/// The pixels that a 16-byte store would write past a row's end are copied byte-wise.
#[inline(always)]
fn untranspose_tile(simd: V3, columns: &[u8], out_stride: usize, out: &mut [u8]) {
    let rows = out.len() / out_stride;
    let pixels = out_stride / 3;
    let groups = if out_stride >= 16 { ((out_stride - 16) / 12 + 1).min(pixels / 4) } else { 0 };
    let (sse2, ssse3) = (simd.sse2, simd.ssse3);
    let spread: __m128i = pulp::cast(SPREAD);
    let pack: __m128i = pulp::cast(PACK_ROWS_0_3);
    let gather: [__m128i; 4] =
        [pulp::cast(GATHER_4[0]), pulp::cast(GATHER_4[1]), pulp::cast(GATHER_4[2]), pulp::cast(GATHER_4[3])];
    for g in 0..groups {
        let x = 4 * g;
        for half in 0..2 {
            let first = half * HALF_ROWS;
            if first >= rows {
                break;
            }
            let mut o = [spread; 4];
            let mut e = [spread; 4];
            for j in 0..4 {
                o[j] = load16(columns, (x + j) * LANES + half * 16);
                e[j] = ssse3._mm_shuffle_epi8(o[j], spread);
            }
            let t0 = sse2._mm_unpacklo_epi32(e[0], e[1]);
            let t1 = sse2._mm_unpackhi_epi32(e[0], e[1]);
            let t2 = sse2._mm_unpacklo_epi32(e[2], e[3]);
            let t3 = sse2._mm_unpackhi_epi32(e[2], e[3]);
            let by_row = [
                sse2._mm_unpacklo_epi64(t0, t2),
                sse2._mm_unpackhi_epi64(t0, t2),
                sse2._mm_unpacklo_epi64(t1, t3),
                sse2._mm_unpackhi_epi64(t1, t3),
            ];
            for (r, row) in by_row.into_iter().enumerate().take(rows - first) {
                store16(out, (first + r) * out_stride + 3 * x, ssse3._mm_shuffle_epi8(row, pack));
            }
            if first + 4 < rows {
                let mut row = ssse3._mm_shuffle_epi8(o[0], gather[0]);
                for j in 1..4 {
                    row = sse2._mm_or_si128(row, ssse3._mm_shuffle_epi8(o[j], gather[j]));
                }
                store16(out, (first + 4) * out_stride + 3 * x, row);
            }
        }
    }
    for x in 4 * groups..pixels {
        for r in 0..rows {
            copy::<3>(&mut out[r * out_stride + 3 * x..], &columns[x * LANES + lane(r)..]);
        }
    }
}

/// First byte of the tile's row `r` in a 32-byte column.
#[inline(always)]
fn lane(r: usize) -> usize {
    (r / HALF_ROWS) * 16 + (r % HALF_ROWS) * 3
}

/// Copies the first `N` bytes of `src` to the start of `dst` (both at least `N` long).
#[inline(always)]
fn copy<const N: usize>(dst: &mut [u8], src: &[u8]) {
    if let (Some(dst), Some(src)) = (dst.first_chunk_mut::<N>(), src.first_chunk::<N>()) {
        *dst = *src;
    }
}

/// Transposes the (up to [`TILE`]) rows of `src` into `columns`. Rows past the last are filled
/// with copies of it (their lanes are computed and never stored).
///
/// Four pixels of a half (5 rows) at a time with byte shuffles: each row's 12 bytes spread to
/// one pixel per 32-bit lane, a 4x4 transpose of those lanes for rows 0..4, each pixel's four
/// rows packed back to 12 bytes and row 4's 3 bytes shuffled in behind them. The pixels that a
/// 16-byte load would read past a row's end are copied byte-wise.
#[inline(always)]
fn transpose_tile(simd: V3, src: &[u8], in_stride: usize, columns: &mut [u8]) {
    let rows = src.len() / in_stride;
    let line = |r: usize| &src[r.min(rows - 1) * in_stride..][..in_stride];
    let lines = [line(0), line(1), line(2), line(3), line(4), line(5), line(6), line(7), line(8), line(9)];
    let pixels = in_stride / 3;
    // Groups of 4 pixels from `x` whose 16-byte loads `3x..3x + 16` stay in the row.
    let groups = if in_stride >= 16 { ((in_stride - 16) / 12 + 1).min(pixels / 4) } else { 0 };
    let (sse2, ssse3) = (simd.sse2, simd.ssse3);
    let spread: __m128i = pulp::cast(SPREAD);
    let pack: __m128i = pulp::cast(PACK_ROWS_0_3);
    let fifth: [__m128i; 4] = [pulp::cast(ROW_4[0]), pulp::cast(ROW_4[1]), pulp::cast(ROW_4[2]), pulp::cast(ROW_4[3])];
    for g in 0..groups {
        let x = 4 * g;
        for half in 0..2 {
            // (No closures around intrinsics: a closure that is not inlined loses AVX2.)
            let mut d = [spread; 5];
            for (r, d) in d.iter_mut().enumerate() {
                *d = ssse3._mm_shuffle_epi8(load16(lines[half * HALF_ROWS + r], 3 * x), spread);
            }
            let t0 = sse2._mm_unpacklo_epi32(d[0], d[1]);
            let t1 = sse2._mm_unpackhi_epi32(d[0], d[1]);
            let t2 = sse2._mm_unpacklo_epi32(d[2], d[3]);
            let t3 = sse2._mm_unpackhi_epi32(d[2], d[3]);
            let by_pixel = [
                sse2._mm_unpacklo_epi64(t0, t2),
                sse2._mm_unpackhi_epi64(t0, t2),
                sse2._mm_unpacklo_epi64(t1, t3),
                sse2._mm_unpackhi_epi64(t1, t3),
            ];
            for (j, (rows_0_3, fifth)) in by_pixel.into_iter().zip(fifth).enumerate() {
                let column =
                    sse2._mm_or_si128(ssse3._mm_shuffle_epi8(rows_0_3, pack), ssse3._mm_shuffle_epi8(d[4], fifth));
                store16(columns, (x + j) * LANES + half * 16, column);
            }
        }
    }
    for x in 4 * groups..pixels {
        for (r, line) in lines.iter().enumerate() {
            copy::<3>(&mut columns[x * LANES + lane(r)..], &line[3 * x..]);
        }
    }
}

/// `pshufb` indices: pixels `0..4` of 12 bytes, one per 32-bit lane (`R G B 0`).
const SPREAD: [u8; 16] = [0, 1, 2, 0x80, 3, 4, 5, 0x80, 6, 7, 8, 0x80, 9, 10, 11, 0x80];
/// `pshufb` indices: four `R G B 0` lanes back to 12 bytes, zeros after.
const PACK_ROWS_0_3: [u8; 16] = [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 0x80, 0x80, 0x80, 0x80];
/// `pshufb` indices: the 32-bit lane `j` of a spread row to bytes `12..15`, zeros elsewhere.
const ROW_4: [[u8; 16]; 4] = [
    [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0, 1, 2, 0x80],
    [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 4, 5, 6, 0x80],
    [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 8, 9, 10, 0x80],
    [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 12, 13, 14, 0x80],
];

/// `pshufb` indices: bytes `12..15` (row 4 of a half) to bytes `3j..3j + 3`, zeros elsewhere.
const GATHER_4: [[u8; 16]; 4] = [
    [12, 13, 14, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80],
    [0x80, 0x80, 0x80, 12, 13, 14, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80],
    [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 12, 13, 14, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80],
    [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 12, 13, 14, 0x80, 0x80, 0x80, 0x80],
];

#[inline(always)]
fn load16(s: &[u8], at: usize) -> __m128i {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&s[at..at + 16]);
    pulp::cast(bytes)
}

#[inline(always)]
fn store16(s: &mut [u8], at: usize, v: __m128i) {
    s[at..at + 16].copy_from_slice(&pulp::cast::<__m128i, [u8; 16]>(v));
}

/// Output row `y` of the vertical pass: tap `t` reads the row `src[offsets[t]..][..out.len()]`.
#[inline(always)]
fn vertical_lanes<A: Accumulator>(
    simd: V3,
    src: &[u8],
    offsets: &[usize],
    y: usize,
    taps: &PairedTaps,
    out: &mut [u8],
) {
    let row_len = out.len();
    let blocks = row_len / LANES;
    for b in 0..blocks {
        let at = b * LANES;
        out[at..at + LANES].copy_from_slice(&vertical_block::<A>(simd, src, offsets, y, taps, at));
    }
    if blocks * LANES == row_len {
        return;
    }
    if blocks > 0 {
        // The last 32 bytes again, overlapping the previous block: same values, no scalar tail.
        let at = row_len - LANES;
        out[at..].copy_from_slice(&vertical_block::<A>(simd, src, offsets, y, taps, at));
        return;
    }
    let k = taps.coeffs.of(y);
    for (x, o) in out.iter_mut().enumerate() {
        let mut ss = HALF;
        for (&offset, &kk) in offsets.iter().zip(k) {
            ss += i32::from(src[offset + x]) * kk;
        }
        *o = clip8(ss);
    }
}

/// Bytes `at..at + 32` of vertical output row `y`.
#[inline(always)]
fn vertical_block<A: Accumulator>(
    simd: V3,
    src: &[u8],
    offsets: &[usize],
    y: usize,
    taps: &PairedTaps,
    at: usize,
) -> [u8; 32] {
    let (lo, hi) = A::words(taps, y);
    let mut acc = A::new(simd);
    for (p, (&lo, &hi)) in lo.iter().zip(hi).enumerate() {
        let a = load32(src, offsets[2 * p] + at);
        let b = if 2 * p + 1 < offsets.len() { load32(src, offsets[2 * p + 1] + at) } else { a };
        acc.add(simd, a, b, lo, hi);
    }
    finish(simd, &acc)
}
