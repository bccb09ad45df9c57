//! The store of a finished tile: the bias after the sum (where MLX adds it there), the cast to
//! the output dtype, the output clip.

use super::arithmetic::{BiasPlacement, clip};
use super::microkernel::{NR, TILE};
use crate::Float;

/// How the accumulators of a tile start and end, fixed for one product.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Epilogue<'a, O> {
    pub(crate) bias: Option<&'a [O]>,
    pub(crate) placement: BiasPlacement,
    pub(crate) out_clip: Option<(O, O)>,
}

impl<O: Float> Epilogue<'_, O> {
    /// Prepares the accumulators of a tile before its first k step: with the bias before the
    /// sum, writes the bias of columns `j0..j0 + cols` into every row and returns `true` (the
    /// kernel starts from the tile); otherwise returns `false` (the kernel starts from zeros).
    pub(crate) fn init(&self, j0: usize, cols: usize, tile: &mut [f32; TILE]) -> bool {
        match (self.placement, self.bias) {
            (BiasPlacement::BeforeSum, Some(bias)) => {
                let mut row = [0.0f32; NR];
                for (d, s) in row.iter_mut().zip(&bias[j0..j0 + cols]) {
                    *d = s.to_f32();
                }
                for dst in tile.chunks_exact_mut(NR) {
                    dst.copy_from_slice(&row);
                }
                true
            }
            _ => false,
        }
    }

    /// Stores rows `0..rows`, columns `0..cols` of a finished tile (output columns
    /// `j0..j0 + cols`) into `out`, whose rows are `ld` elements apart.
    #[inline(always)]
    pub(crate) fn store(&self, tile: &[f32; TILE], rows: usize, j0: usize, cols: usize, out: &mut [O], ld: usize) {
        let bias = match (self.placement, self.bias) {
            (BiasPlacement::AfterSum, Some(bias)) => Some(&bias[j0..j0 + cols]),
            _ => None,
        };
        for (r, acc) in tile.chunks_exact(NR).take(rows).enumerate() {
            self.store_row(&acc[..cols], bias, &mut out[r * ld..r * ld + cols]);
        }
    }

    #[inline(always)]
    fn store_row(&self, acc: &[f32], bias: Option<&[O]>, dst: &mut [O]) {
        match (bias, self.out_clip) {
            (None, None) => {
                for (d, &x) in dst.iter_mut().zip(acc) {
                    *d = O::from_f32(x);
                }
            }
            (Some(bias), None) => {
                for ((d, &x), &c) in dst.iter_mut().zip(acc).zip(bias) {
                    *d = O::from_f32(x + c.to_f32());
                }
            }
            (None, Some((lo, hi))) => {
                for (d, &x) in dst.iter_mut().zip(acc) {
                    *d = clip(O::from_f32(x), lo, hi);
                }
            }
            (Some(bias), Some((lo, hi))) => {
                for ((d, &x), &c) in dst.iter_mut().zip(acc).zip(bias) {
                    *d = clip(O::from_f32(x + c.to_f32()), lo, hi);
                }
            }
        }
    }
}
