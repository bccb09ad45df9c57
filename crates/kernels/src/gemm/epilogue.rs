//! The store of a finished tile: the bias after the sum (where MLX adds it there), the cast to
//! the output dtype, the output clip.

use super::arithmetic::BiasPlacement;
use super::tile::{NR, TILE};
use crate::Float;
use crate::cpu::Isa;
use crate::elementwise::clip_scalar;

/// How the accumulators of a tile start and end, fixed for one product.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Epilogue<'a, O> {
    pub(crate) bias: Option<&'a [O]>,
    pub(crate) placement: BiasPlacement,
    pub(crate) out_clip: Option<(O, O)>,
    /// The instruction set whose vector code stores full rows of a tile (the same values).
    pub(crate) isa: Isa,
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
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let clip = self.out_clip.map(|(lo, hi)| (lo.to_f32(), hi.to_f32()));
            // (A NaN bound keeps its own bits in MLX's clip; the vector store would
            // canonicalise a bf16 one, so those rows take the scalar path.)
            let nan_bound = clip.is_some_and(|(lo, hi)| lo.is_nan() || hi.is_nan());
            #[cfg(target_arch = "x86_64")]
            if let Some(avx2) = self.isa.avx2().filter(|_| cols == NR && !nan_bound) {
                for (r, acc) in tile.chunks_exact(NR).take(rows).enumerate() {
                    avx2::store_row(avx2, acc, bias, clip, &mut out[r * ld..r * ld + NR]);
                }
                return;
            }
            #[cfg(target_arch = "aarch64")]
            if let Some(neon) = self.isa.neon().filter(|_| cols == NR && !nan_bound) {
                for (r, acc) in tile.chunks_exact(NR).take(rows).enumerate() {
                    neon::store_row(neon, acc, bias, clip, &mut out[r * ld..r * ld + NR]);
                }
                return;
            }
        }
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
                    *d = clip_scalar(O::from_f32(x), Some(lo), Some(hi));
                }
            }
            (Some(bias), Some((lo, hi))) => {
                for ((d, &x), &c) in dst.iter_mut().zip(acc).zip(bias) {
                    *d = clip_scalar(O::from_f32(x + c.to_f32()), Some(lo), Some(hi));
                }
            }
        }
    }
}

crate::simd::stamp! {
    lanes v for Avx2, Neon;

    /// [`Epilogue::store_row`] for a full row of `NR` values, `LANES` at a time:
    /// `O(acc [+ bias])`, then MLX's clip on the `O` values (a NaN kept; the bounds not NaN),
    /// stored as `O`.
    entry fn store_row[O: Float](acc: &[f32], bias: Option<&[O]>, clip: Option<(f32, f32)>, dst: &mut [O]) {
        let (acc, dst) = (&acc[..NR], &mut dst[..NR]);
        for vector in 0..NR / v::LANES {
            let at = vector * v::LANES;
            let mut y = v::load_at(acc, at);
            if let Some(bias) = bias {
                y = v::add(y, v::load_at(bias, at));
            }
            y = v::round::<O>(y);
            if let Some(bounds) = clip {
                y = v::clip(y, bounds);
            }
            // `y` holds values of `O` (rounded above, or a bound of `O`): the store is exact.
            v::store_at(dst, at, y);
        }
    }
}
