//! The portable micro-kernel: the tile's accumulators in fixed-size arrays, left to the
//! compiler's auto-vectoriser (across the tile's columns; each accumulator's k order stays).

use super::microkernel::{MR, NR, TILE};

/// `tile += a · b`, `a` = `kc × MR` and `b` = `kc × NR` packed (k-major), `kc = b.len() / NR`.
pub(crate) fn tile(a: &[f32], b: &[f32], tile: &mut [f32; TILE]) {
    let mut acc = [[0.0f32; NR]; MR];
    for (row, src) in acc.iter_mut().zip(tile.chunks_exact(NR)) {
        row.copy_from_slice(src);
    }
    for (a_k, b_k) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        for (row, &x) in acc.iter_mut().zip(a_k) {
            for (c, &y) in row.iter_mut().zip(b_k) {
                let product = x * y;
                *c += product;
            }
        }
    }
    for (dst, row) in tile.chunks_exact_mut(NR).zip(&acc) {
        dst.copy_from_slice(row);
    }
}
