//! The fast path of [`attention`](super::attention): `k` and `v` packed once per (batch row, kv
//! head), then one task per (batch row, block of `NR` queries), in parallel, each running
//! every query head:
//!
//! 1. `q'` of the block as one panel; the scores transposed, `sᵀ = k · q'ᵀ` (`Lk × NR`), one
//!    micro-kernel tile (`MR` keys × `NR` queries, a k-sum over the head dimension) at a time,
//!    straight into the block's score buffer;
//! 2. the masked softmax down the keys, lane by lane ([`softmax`](super::softmax));
//! 3. `outᵀ = vᵀ · pᵀ` (`D × NR`), a k-sum over the keys in blocks of [`KEY_BLOCK`] through
//!    the tiles' `f32` accumulators, stored transposed into the token-major output.
//!
//! Each output is computed by one task in the reference's order, so the bits do not depend
//! on the split.

use super::pack::{pack_keys, pack_queries, pack_values};
use super::softmax::{Lanes, softmax};
use super::{AttentionShape, MaskRef, check_arguments};
use crate::gemm::microkernel::{MR, NR, TILE, TileKernel};
use crate::gemm::{MicroKernel, with_scratch};
use crate::{Float, Result};
use rayon::prelude::*;

/// Keys per k block of `p · v` (a `KEY_BLOCK × NR` slice of `pᵀ` stays in L1).
const KEY_BLOCK: usize = 256;

/// [`attention_with`](super::attention_with).
#[allow(clippy::too_many_arguments, reason = "attention's arguments and the kernel choice")]
pub(crate) fn run<T: Float>(
    kernel: MicroKernel,
    shape: AttentionShape,
    q: &[T],
    k: &[T],
    v: &[T],
    scale: f32,
    mask: Option<MaskRef<'_, T>>,
    out: &mut [T],
) -> Result<()> {
    check_arguments(&shape, q, k, v, mask.as_ref(), out)?;
    let AttentionShape { batch, kv_heads, queries, keys, head_dim, .. } = shape;
    if out.is_empty() {
        return Ok(());
    }
    if keys == 0 {
        // An empty softmax, then a product over no keys: zeros.
        out.fill(T::default());
        return Ok(());
    }
    let tile = kernel.resolve();
    let lanes = Lanes::new(kernel == MicroKernel::Avx2);
    let key_panels = keys.div_ceil(MR);
    let dim_panels = head_dim.div_ceil(MR);
    let keys_len = key_panels * head_dim * MR;
    let values_len = dim_panels * keys * MR;
    let mut packed_keys = vec![0.0f32; batch * kv_heads * keys_len];
    let mut packed_values = vec![0.0f32; batch * kv_heads * values_len];
    packed_keys.par_chunks_mut(keys_len).zip(packed_values.par_chunks_mut(values_len)).enumerate().for_each(
        |(bg, (keys_dst, values_dst))| {
            pack_keys(&shape, k, bg / kv_heads, bg % kv_heads, keys_dst);
            pack_values(&shape, v, bg / kv_heads, bg % kv_heads, values_dst);
        },
    );
    let packed = Packed { keys: &packed_keys, values: &packed_values, keys_len, values_len };
    let scale = T::from_f32(scale);
    let row_len = shape.query_heads * head_dim;
    out.par_chunks_mut(queries * row_len).enumerate().for_each(|(b, batch_out)| {
        batch_out.par_chunks_mut(NR * row_len).enumerate().for_each(|(block, block_out)| {
            let i0 = block * NR;
            let task = Task { shape: &shape, tile, lanes, packed: &packed, q, scale, mask: mask.as_ref(), b, i0 };
            task.run(block_out);
        });
    });
    Ok(())
}

/// The packed `k` and `v` of every (batch row, kv head).
struct Packed<'a> {
    keys: &'a [f32],
    values: &'a [f32],
    keys_len: usize,
    values_len: usize,
}

/// One block of up to `NR` queries of one batch row, all query heads.
struct Task<'a, T> {
    shape: &'a AttentionShape,
    tile: TileKernel,
    lanes: Lanes,
    packed: &'a Packed<'a>,
    q: &'a [T],
    scale: T,
    mask: Option<&'a MaskRef<'a, T>>,
    b: usize,
    i0: usize,
}

impl<T: Float> Task<'_, T> {
    /// Computes the block's output rows (`out`: `count` tokens × `Hq · D`).
    fn run(&self, out: &mut [T]) {
        let AttentionShape { query_heads, kv_heads, keys, head_dim, .. } = *self.shape;
        let count = out.len() / (query_heads * head_dim);
        let key_panels = keys.div_ceil(MR);
        let dim_panels = head_dim.div_ceil(MR);
        let scores_len = key_panels * TILE;
        let mask_len = if self.mask.is_some() { keys * NR } else { 0 };
        let query_len = head_dim * NR;
        let group = query_heads / kv_heads;
        with_scratch(scores_len + mask_len + query_len + dim_panels * TILE, |scratch| {
            let (scores, rest) = scratch.split_at_mut(scores_len);
            let (mask_t, rest) = rest.split_at_mut(mask_len);
            let (query_panel, rest) = rest.split_at_mut(query_len);
            let (tiles, _) = rest.as_chunks_mut::<TILE>();
            let shared_mask = self.mask.filter(|mask| mask.shared_by_heads());
            if let Some(mask) = shared_mask {
                self.transpose_mask(mask, 0, count, mask_t);
            }
            for h in 0..query_heads {
                let g = h / group;
                let bg = self.b * kv_heads + g;
                let packed_keys = &self.packed.keys[bg * self.packed.keys_len..][..self.packed.keys_len];
                let packed_values = &self.packed.values[bg * self.packed.values_len..][..self.packed.values_len];
                pack_queries(self.shape, self.q, self.scale, self.b, h, (self.i0, count), query_panel);
                for (p, score_tile) in scores.as_chunks_mut::<TILE>().0.iter_mut().enumerate() {
                    let key_panel = &packed_keys[p * head_dim * MR..];
                    self.tile.run(head_dim, key_panel, query_panel, score_tile, false);
                }
                let probabilities = &mut scores[..keys * NR];
                let mask_t: Option<&[f32]> = match self.mask {
                    None => None,
                    Some(_) if shared_mask.is_some() => Some(mask_t),
                    Some(mask) => {
                        self.transpose_mask(mask, h, count, mask_t);
                        Some(mask_t)
                    }
                };
                softmax::<T>(self.lanes, probabilities, mask_t);
                for j0 in (0..keys).step_by(KEY_BLOCK) {
                    let kc = KEY_BLOCK.min(keys - j0);
                    let p_block = &probabilities[j0 * NR..];
                    for (dp, tile) in tiles.iter_mut().enumerate() {
                        let v_block = &packed_values[dp * keys * MR + j0 * MR..];
                        self.tile.run(kc, v_block, p_block, tile, j0 > 0);
                    }
                }
                for (dp, tile) in tiles.iter().enumerate() {
                    for (r, row) in tile.chunks_exact(NR).enumerate().take(head_dim - dp * MR) {
                        let d = dp * MR + r;
                        for (lane, &x) in row.iter().enumerate().take(count) {
                            out[(lane * query_heads + h) * head_dim + d] = T::from_f32(x);
                        }
                    }
                }
            }
        });
    }

    /// `dst[j · NR + lane]` = the mask of query `i0 + lane`, key `j`, for query head `h`
    /// (lanes past `count` zero).
    fn transpose_mask(&self, mask: &MaskRef<'_, T>, h: usize, count: usize, dst: &mut [f32]) {
        const CHUNK: usize = 64;
        let keys = self.shape.keys;
        if count < NR {
            dst.fill(0.0);
        }
        for j0 in (0..keys).step_by(CHUNK) {
            let len = CHUNK.min(keys - j0);
            for lane in 0..count {
                let row = &mask.row(self.shape, self.b, h, self.i0 + lane)[j0..j0 + len];
                for (j, &x) in row.iter().enumerate() {
                    dst[(j0 + j) * NR + lane] = x.to_f32();
                }
            }
        }
    }
}
