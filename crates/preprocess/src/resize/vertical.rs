//! Pillow's vertical 8-bit pass: every output row is a weighted sum of whole input rows,
//! computed sixteen bytes at a time with the exact split multiply-add of [`simd`](super::simd).

use super::coefficients::{Coefficients, HALF, clip8};
use super::simd::{Acc16, TapPair, load16};
use rayon::prelude::*;

/// Output rows per parallel task.
const ROWS_PER_TASK: usize = 4;

/// Resamples `src` (rows of `row_len` bytes; row `i` of `src` is source row `i + row_offset`)
/// vertically into `out` (one row per output of `coeffs`). Tasks run on rayon's pool.
pub fn vertical(src: &[u8], row_len: usize, row_offset: usize, coeffs: &Coefficients, out: &mut [u8]) {
    if row_len == 0 {
        return;
    }
    out.par_chunks_mut(row_len * ROWS_PER_TASK).enumerate().for_each(|(task, chunk)| {
        let mut pairs = Vec::new();
        for (i, out_row) in chunk.chunks_exact_mut(row_len).enumerate() {
            let yy = task * ROWS_PER_TASK + i;
            let ymin = coeffs.start[yy] - row_offset;
            let k = coeffs.of(yy);
            let rows: Vec<&[u8]> = (0..k.len()).map(|y| &src[(ymin + y) * row_len..(ymin + y + 1) * row_len]).collect();
            pairs.clear();
            pairs.extend(TapPair::pairs(k));
            output_row(&rows, k, &pairs, out_row);
        }
    });
}

/// One output row from the rows its taps read.
fn output_row(rows: &[&[u8]], k: &[i32], pairs: &[TapPair], out: &mut [u8]) {
    let blocks = out.len() / 16;
    for b in 0..blocks {
        let at = b * 16;
        let mut acc = Acc16::new();
        for (p, &pair) in pairs.iter().enumerate() {
            let a = load16(rows[2 * p], at);
            let second = rows.get(2 * p + 1).map_or(a, |row| load16(row, at));
            acc.add(a, second, pair);
        }
        out[at..at + 16].copy_from_slice(&acc.finish());
    }
    for (x, o) in out.iter_mut().enumerate().skip(blocks * 16) {
        let mut ss = HALF;
        for (row, &kk) in rows.iter().zip(k) {
            ss += i32::from(row[x]) * kk;
        }
        *o = clip8(ss);
    }
}
