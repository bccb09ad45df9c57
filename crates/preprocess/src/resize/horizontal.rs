//! Pillow's horizontal 8-bit pass. Rows are taken five at a time and transposed so that one
//! source column of the five rows (15 bytes, padded to 16) is one vector; every output pixel is
//! then the multiply-add of its taps' columns, with the exact split arithmetic of
//! [`simd`](super::simd).

use super::coefficients::Coefficients;
use super::simd::{Acc16, TapPair, load16};
use rayon::prelude::*;

/// Rows per tile: 5 rows x 3 channels fill 15 of a vector's 16 lanes.
const TILE: usize = 5;
const LANES: usize = 16;

/// Resamples rows `first..first + out.len() / (out_w * 3)` of `src` (`in_w` RGB pixels per row)
/// horizontally into `out` (`out_w` RGB pixels per row). Tiles run on rayon's pool.
pub fn horizontal(src: &[u8], in_w: usize, first: usize, coeffs: &Coefficients, out: &mut [u8]) {
    let out_w = coeffs.start.len();
    let out_stride = out_w * 3;
    if out_stride == 0 {
        return;
    }
    // Every output's taps as pairs, once for all tiles.
    let mut pair_start = Vec::with_capacity(out_w + 1);
    let mut pairs = Vec::new();
    for xx in 0..out_w {
        pair_start.push(pairs.len());
        pairs.extend(TapPair::pairs(coeffs.of(xx)));
    }
    pair_start.push(pairs.len());

    out.par_chunks_mut(out_stride * TILE).enumerate().for_each(|(tile, out_tile)| {
        let rows = out_tile.len() / out_stride;
        let columns = transpose_tile(src, in_w, first + tile * TILE, rows);
        let zero = wide::u8x16::ZERO;
        for (xx, &xmin) in coeffs.start.iter().enumerate() {
            let len = coeffs.len[xx];
            let mut acc = Acc16::new();
            for (p, &pair) in pairs[pair_start[xx]..pair_start[xx + 1]].iter().enumerate() {
                let x = xmin + 2 * p;
                let a = load16(&columns, x * LANES);
                let b = if 2 * p + 1 < len { load16(&columns, (x + 1) * LANES) } else { zero };
                acc.add(a, b, pair);
            }
            let lanes = acc.finish();
            for r in 0..rows {
                let at = r * out_stride + xx * 3;
                out_tile[at..at + 3].copy_from_slice(&lanes[r * 3..r * 3 + 3]);
            }
        }
    });
}

/// `rows` source rows from `row0` as columns: `[in_w][16]`, byte `r * 3 + c` of column `x` is
/// channel `c` of pixel `x` of row `row0 + r`; unused lanes stay zero.
fn transpose_tile(src: &[u8], in_w: usize, row0: usize, rows: usize) -> Vec<u8> {
    let mut columns = vec![0u8; in_w * LANES];
    for r in 0..rows {
        let line = &src[(row0 + r) * in_w * 3..(row0 + r + 1) * in_w * 3];
        for (column, pixel) in columns.chunks_exact_mut(LANES).zip(line.chunks_exact(3)) {
            column[r * 3..r * 3 + 3].copy_from_slice(pixel);
        }
    }
    columns
}
