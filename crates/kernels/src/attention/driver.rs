//! The fast path of [`attention`](super::attention): `k` and `v` packed once per (batch row, kv
//! head), then one task per (batch row, block of [`QUERY_PANELS`] panels of `NR` queries), in
//! parallel, each running every query head:
//!
//! 1. `q'` of the block as one panel; the scores transposed, `sᵀ = k · q'ᵀ` (`Lk × NR`), one
//!    micro-kernel tile (`MR` keys × `NR` queries, a k-sum over the head dimension) at a time,
//!    straight into the block's score buffer, each call prefetching a share of the next key
//!    panels;
//! 2. the masked softmax down the keys, lane by lane ([`softmax`](super::softmax)); unmasked,
//!    with step 1's rounding deferred to step 2 unless a sum is not finite;
//! 3. `outᵀ = vᵀ · pᵀ` (`D × NR`), a k-sum over the keys in blocks of [`KEY_BLOCK`] through
//!    the tiles' `f32` accumulators, stored transposed into the token-major output.
//!
//! Each output is computed by one task in the reference's order, so the bits do not depend
//! on the split.

use super::pack::{pack_keys, pack_queries, pack_values};
use super::softmax::Lanes;
use super::{AttentionInputs, AttentionShape, MaskRef};
use crate::gemm::MicroKernel;
use crate::gemm::magnitudes::{Magnitudes, products_are_exact};
use crate::gemm::microkernel::{Steps, TileKernel};
use crate::gemm::scratch::{with_scratch, with_shared};
use crate::gemm::tile::{MR, NR, TILE, prefetch_share};
use crate::{ElementType, Float};
use rayon::prelude::*;

/// Query panels (of `NR` queries) per task: each packed panel of `k` or `v` serves this many
/// tiles while it is in L1. The block's scores (`QUERY_PANELS · Lk · NR` floats) then leave
/// L2 at long `Lk`, but the keys and values, which stream from L3 there too, are read a
/// quarter as often as with one panel per task.
const QUERY_PANELS: usize = 4;

/// Keys per k block of `p · v` (a `KEY_BLOCK × NR` slice of `pᵀ` stays in L1).
const KEY_BLOCK: usize = 256;

/// How a product's k steps round: FMA where every product is exact.
fn steps(exact: bool) -> Steps {
    if exact { Steps::Fused } else { Steps::Mlx }
}

/// [`attention_with`](super::attention_with) on checked inputs and a nonempty output.
pub(crate) fn run<T: Float>(kernel: MicroKernel, inputs: AttentionInputs<'_, T>, out: &mut [T]) {
    let AttentionInputs { shape, q, k, v, scale, mask } = inputs;
    let AttentionShape { batch, kv_heads, queries, keys, head_dim, .. } = shape;
    if keys == 0 {
        // An empty softmax, then a product over no keys: zeros.
        out.fill(T::default());
        return;
    }
    // A mask of zeros changes no score: each k-sum starts at `+0`, so no score is `−0`, and
    // `s + ±0 = s` for every other `s` (NaNs included). Skipping it saves its transposition
    // and its adds.
    let mask = mask.filter(|mask| !mask.is_zero());
    let isa = kernel.isa();
    let tile = TileKernel::new(isa);
    let lanes = Lanes::new(isa);
    let key_panels = keys.div_ceil(MR);
    let dim_panels = head_dim.div_ceil(MR);
    let keys_len = key_panels * head_dim * MR;
    let values_len = dim_panels * keys * MR;
    // bf16 operands: FMA gives the separate multiply-add's bits wherever the magnitudes make
    // every product exact (see `gemm::magnitudes`), where the kernel has such an FMA.
    let exact_possible = T::DTYPE == ElementType::Bf16 && tile.fma_when_exact();
    let groups = batch * kv_heads;
    with_shared(groups * (keys_len + values_len), |buffer| {
        let (packed_keys, packed_values) = buffer.split_at_mut(groups * keys_len);
        let (key_magnitudes, value_magnitudes): (Vec<Magnitudes>, Vec<Magnitudes>) = packed_keys
            .par_chunks_mut(keys_len)
            .zip(packed_values.par_chunks_mut(values_len))
            .enumerate()
            .map(|(bg, (keys_dst, values_dst))| {
                pack_keys(isa, &shape, k, bg / kv_heads, bg % kv_heads, keys_dst);
                pack_values(&shape, v, bg / kv_heads, bg % kv_heads, values_dst);
                if exact_possible {
                    (Magnitudes::of(keys_dst, isa), Magnitudes::of(values_dst, isa))
                } else {
                    (Magnitudes::EMPTY, Magnitudes::EMPTY)
                }
            })
            .unzip();
        let packed = Packed {
            keys: packed_keys,
            values: packed_values,
            keys_len,
            values_len,
            key_magnitudes,
            value_magnitudes,
            exact_possible,
        };
        let scale = T::from_f32(scale);
        let row_len = shape.query_heads * head_dim;
        out.par_chunks_mut(queries * row_len).enumerate().for_each(|(b, batch_out)| {
            batch_out.par_chunks_mut(QUERY_PANELS * NR * row_len).enumerate().for_each(|(block, block_out)| {
                let i0 = block * QUERY_PANELS * NR;
                let task = Task { shape: &shape, tile, lanes, packed: &packed, q, scale, mask: mask.as_ref(), b, i0 };
                task.run(block_out);
            });
        });
    });
}

/// Step 1's maximum from [`Lanes::raw_maximum`]'s lanes (`maximum`, `check`): `T(maximum)`,
/// where no raw sum was NaN or infinite (every `check` finite) and no maximum overflows `T`;
/// otherwise `None`, and step 1 must run on the sums. (Where the maxima are zeros, the
/// reference keeps the first of `+0` and `−0` and this may hold the other: `s − m` then differs
/// only in the sign of a zero, and `exp(−0)` has the bits of `exp(+0)`.)
fn deferred_maximum<T: Float>(maximum: &[f32; NR], check: &[f32; NR]) -> Option<[f32; NR]> {
    let rounded = maximum.map(|m| T::from_f32(m).to_f32());
    check.iter().chain(&rounded).all(|x| x.is_finite()).then_some(rounded)
}

/// The packed `k` and `v` of every (batch row, kv head).
struct Packed<'a> {
    keys: &'a [f32],
    values: &'a [f32],
    keys_len: usize,
    values_len: usize,
    /// Per (batch row, kv head) (empty where `exact_possible` is not).
    key_magnitudes: Vec<Magnitudes>,
    value_magnitudes: Vec<Magnitudes>,
    /// Whether the operands hold bf16 values (and the kernel has an FMA for exact products).
    exact_possible: bool,
}

impl Packed<'_> {
    /// Whether every product of the packed operand `bg` (`magnitudes`) with values of
    /// magnitudes `other` is exact, so that FMA gives MLX's bits.
    fn exact(&self, magnitudes: &[Magnitudes], bg: usize, other: Magnitudes) -> bool {
        self.exact_possible && magnitudes.get(bg).is_some_and(|&packed| products_are_exact(packed, other))
    }
}

/// One block of up to `QUERY_PANELS · NR` queries of one batch row, all query heads.
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
        let panels = count.div_ceil(NR);
        let lanes = |qp: usize| NR.min(count - qp * NR);
        let key_panels = keys.div_ceil(MR);
        let dim_panels = head_dim.div_ceil(MR);
        let scores_len = key_panels * TILE;
        let mask_len = if self.mask.is_some() { keys * NR } else { 0 };
        let query_len = head_dim * NR;
        let tiles_len = dim_panels * TILE;
        let group = query_heads / kv_heads;
        let len = panels * (scores_len + mask_len + query_len + tiles_len);
        with_scratch(len, |scratch| {
            let (scores, rest) = scratch.split_at_mut(panels * scores_len);
            let (mask_t, rest) = rest.split_at_mut(panels * mask_len);
            let (query_panels, tiles) = rest.split_at_mut(panels * query_len);
            let shared_mask = self.mask.filter(|mask| mask.shared_by_heads());
            if let Some(mask) = shared_mask {
                for (qp, dst) in mask_t.chunks_exact_mut(mask_len).enumerate() {
                    self.transpose_mask(mask, 0, (self.i0 + qp * NR, lanes(qp)), dst);
                }
            }
            for h in 0..query_heads {
                let g = h / group;
                let bg = self.b * kv_heads + g;
                let packed_keys = &self.packed.keys[bg * self.packed.keys_len..][..self.packed.keys_len];
                let packed_values = &self.packed.values[bg * self.packed.values_len..][..self.packed.values_len];
                for (qp, panel) in query_panels.chunks_exact_mut(query_len).enumerate() {
                    let block = (self.i0 + qp * NR, lanes(qp));
                    pack_queries(self.lanes.isa(), self.shape, self.q, self.scale, self.b, h, block, panel);
                }
                if let Some(mask) = self.mask.filter(|_| shared_mask.is_none()) {
                    for (qp, dst) in mask_t.chunks_exact_mut(mask_len).enumerate() {
                        self.transpose_mask(mask, h, (self.i0 + qp * NR, lanes(qp)), dst);
                    }
                }
                let mut exact_scores = [false; QUERY_PANELS];
                for (exact, panel) in exact_scores.iter_mut().zip(query_panels.chunks_exact(query_len)) {
                    *exact =
                        self.packed.exact(&self.packed.key_magnitudes, bg, Magnitudes::of(panel, self.lanes.isa()));
                }
                // sᵀ = k · q'ᵀ, each key panel serving every query panel while in L1; each
                // tile's scores are finished (rounded, masked, into the maximum) right away.
                // (Key panels two at a time: the tiles of panels `p` and `p + 1` are consecutive
                // keys in the score buffer, and both products share the query panel.)
                let mut maximum = [[f32::NEG_INFINITY; NR]; QUERY_PANELS];
                let mut check = [[0.0f32; NR]; QUERY_PANELS];
                let key_panel = |p: usize| &packed_keys[p * head_dim * MR..][..head_dim * MR];
                let mut p = 0;
                while p < key_panels {
                    let count = if p + 1 < key_panels { 2 } else { 1 };
                    let first_key = p * MR;
                    let rows = (count * MR).min(keys - first_key);
                    // The next two key panels, a share prefetched by each query panel's call.
                    let next_keys = packed_keys.get((p + count) * head_dim * MR..).unwrap_or_default();
                    let next_keys = &next_keys[..next_keys.len().min(2 * head_dim * MR)];
                    let panels = scores.chunks_exact_mut(scores_len).zip(query_panels.chunks_exact(query_len));
                    for (qp, (scores, query_panel)) in panels.enumerate() {
                        let tiles = &mut scores.as_chunks_mut::<TILE>().0[p..p + count];
                        let exact = exact_scores[qp];
                        let next = prefetch_share(next_keys, QUERY_PANELS, (qp, 1));
                        match tiles.first_chunk_mut::<2>() {
                            Some(pair) => {
                                let panels = ([key_panel(p), key_panel(p + 1)], query_panel);
                                self.tile.run_pair(steps(exact), head_dim, panels, pair, false, next);
                            }
                            None => {
                                self.tile.run(exact, head_dim, (key_panel(p), query_panel), &mut tiles[0], false, next)
                            }
                        }
                        let block = &mut tiles.as_flattened_mut()[..rows * NR];
                        if self.mask.is_some() {
                            let mask_rows = &mask_t[qp * mask_len + first_key * NR..][..rows * NR];
                            self.lanes.scores::<T>(block, Some(mask_rows), &mut maximum[qp]);
                        } else {
                            self.lanes.raw_maximum(block, &mut maximum[qp], &mut check[qp]);
                        }
                    }
                    p += count;
                }
                let mut inverse = [[0.0f32; NR]; QUERY_PANELS];
                for (qp, scores) in scores.chunks_exact_mut(scores_len).enumerate() {
                    let scores = &mut scores[..keys * NR];
                    let sum = if self.mask.is_some() {
                        self.lanes.exponentials::<f32>(scores, &maximum[qp])
                    } else if let Some(maximum) = deferred_maximum::<T>(&maximum[qp], &check[qp]) {
                        self.lanes.exponentials::<T>(scores, &maximum)
                    } else {
                        // A sum or a maximum not finite: step 1 as the reference runs it.
                        let mut maximum = [f32::NEG_INFINITY; NR];
                        self.lanes.scores::<T>(scores, None, &mut maximum);
                        self.lanes.exponentials::<f32>(scores, &maximum)
                    };
                    inverse[qp] = sum.map(|total| 1.0 / total);
                }
                // outᵀ = vᵀ · pᵀ: a block of keys is normalised, then multiplied by the value
                // panels' blocks.
                for j0 in (0..keys).step_by(KEY_BLOCK) {
                    let kc = KEY_BLOCK.min(keys - j0);
                    let mut exact_values = [false; QUERY_PANELS];
                    for (qp, scores) in scores.chunks_exact_mut(scores_len).enumerate() {
                        let block = &mut scores[j0 * NR..(j0 + kc) * NR];
                        let magnitudes = self.lanes.normalize::<T>(block, &inverse[qp]);
                        exact_values[qp] = self.packed.exact(&self.packed.value_magnitudes, bg, magnitudes);
                    }
                    // A query panel's block of `pᵀ` stays in L1 while the value panels' blocks
                    // stream past it, each call prefetching the next.
                    let v_block = |dp: usize| &packed_values[dp * keys * MR + j0 * MR..][..kc * MR];
                    let panels = scores.chunks_exact(scores_len).zip(tiles.chunks_exact_mut(tiles_len));
                    for (qp, (probabilities, tiles)) in panels.enumerate() {
                        let p_block = &probabilities[j0 * NR..][..kc * NR];
                        let tiles = tiles.as_chunks_mut::<TILE>().0;
                        let mut dp = 0;
                        while dp < dim_panels {
                            match tiles[dp..].first_chunk_mut::<2>() {
                                Some(pair) => {
                                    let next = if dp + 2 < dim_panels { v_block(dp + 2) } else { &[] };
                                    let panels = ([v_block(dp), v_block(dp + 1)], p_block);
                                    self.tile.run_pair(steps(exact_values[qp]), kc, panels, pair, j0 > 0, next);
                                    dp += 2;
                                }
                                None => {
                                    let next = if dp + 1 < dim_panels { v_block(dp + 1) } else { &[] };
                                    let tile = &mut tiles[dp];
                                    self.tile.run(exact_values[qp], kc, (v_block(dp), p_block), tile, j0 > 0, next);
                                    dp += 1;
                                }
                            }
                        }
                    }
                }
                for (qp, tiles) in tiles.chunks_exact(tiles_len).enumerate() {
                    for (dp, tile) in tiles.as_chunks::<TILE>().0.iter().enumerate() {
                        for (r, row) in tile.chunks_exact(NR).enumerate().take(head_dim - dp * MR) {
                            let d = dp * MR + r;
                            for (lane, &x) in row.iter().enumerate().take(lanes(qp)) {
                                out[((qp * NR + lane) * query_heads + h) * head_dim + d] = T::from_f32(x);
                            }
                        }
                    }
                }
            }
        });
    }

    /// `dst[j · NR + lane]` = the mask of query `first + lane`, key `j`, for query head `h`
    /// (lanes past `count` zero).
    fn transpose_mask(&self, mask: &MaskRef<'_, T>, h: usize, (first, count): (usize, usize), dst: &mut [f32]) {
        const CHUNK: usize = 64;
        let keys = self.shape.keys;
        if count < NR {
            dst.fill(0.0);
        }
        for j0 in (0..keys).step_by(CHUNK) {
            let len = CHUNK.min(keys - j0);
            for lane in 0..count {
                let row = &mask.row(self.shape, self.b, h, first + lane)[j0..j0 + len];
                for (j, &x) in row.iter().enumerate() {
                    dst[(j0 + j) * NR + lane] = x.to_f32();
                }
            }
        }
    }
}
