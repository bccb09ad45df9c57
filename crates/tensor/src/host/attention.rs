//! Scaled dot-product attention over host float32 buffers, in query blocks that stay in cache.

use super::attention_tiles as tiles;
use super::parallel::for_row_chunks;
use super::sgemm::{Matrix, MatrixMut, sgemm_on_calling_thread};
use super::softmax::exp_shifted_row;
use crate::{Error, Result};
use std::sync::Mutex;

/// Query rows per work item, at most: the item's scores (`QUERY_BLOCK × keys` floats, 1.3 MB at
/// 2520 keys) stay in cache between the two products and the softmax (64–384 measured within
/// 5% of one another at 2394 keys here; 48 slower).
const QUERY_BLOCK: usize = 128;

/// Extents of one grouped-query attention call. Buffers are row-major and token-major (the
/// layout of the projections that produce them): `q` and the output are
/// `[batch, queries, query_heads, head_dim]`, `k` and `v` are `[batch, keys, kv_heads, head_dim]`;
/// query head `h` reads key/value head `h / (query_heads / kv_heads)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionShape {
    pub batch: usize,
    pub query_heads: usize,
    pub kv_heads: usize,
    pub queries: usize,
    pub keys: usize,
    pub head_dim: usize,
}

/// An additive row-major mask `[batch, heads, rows, keys]` whose first three extents are 1
/// (broadcast) or those of the attention (`batch`, `query_heads`, `queries`).
#[derive(Debug, Clone, Copy)]
pub struct AttentionMask<'a> {
    pub values: &'a [f32],
    pub batch: usize,
    pub heads: usize,
    pub rows: usize,
}

/// `out = softmax(scale · q kᵀ + mask) v` per batch and head (shapes in [`AttentionShape`]).
///
/// Work is split into blocks of query rows (all heads of those rows) spread over the cores;
/// per head, a block's scores are computed, exponentiated in place with the vectorised
/// exponential and multiplied with `v`, and the result rows are divided by their softmax
/// sums. The two products are register-tiled AVX2 + FMA kernels over keys packed once per
/// call when the CPU has them and `head_dim` is a multiple of 8; otherwise they come from the
/// linked BLAS (on the worker's thread alone where the BLAS allows it per call, see
/// [`mlx_ffi::blas::sgemm_on_calling_thread`]; its process-wide thread count is never changed,
/// as that changes the bits of concurrent MLX matmuls). Accurate to float32 rounding of the
/// exact function; a row whose scores are all `-∞` gives NaN, as a softmax does.
///
/// Fails with [`Error::Shape`] (writing nothing) when a buffer's length or the mask's extents
/// do not match the shape, or `query_heads` is not a multiple of a non-zero `kv_heads`.
pub fn attention(
    shape: AttentionShape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    scale: f32,
    mask: Option<AttentionMask<'_>>,
    out: &mut [f32],
) -> Result<()> {
    let products = if tiles::available(shape.head_dim) { Products::Tiled } else { Products::Blas };
    attention_with(products, shape, q, k, v, scale, mask, out)
}

/// How a block's two products are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Products {
    /// [`tiles::scores`] over packed keys and [`tiles::weighted_sum`].
    Tiled,
    /// The linked BLAS over transposed keys.
    Blas,
}

/// [`attention`] with its products computed as `products` says.
#[allow(clippy::too_many_arguments)]
fn attention_with(
    products: Products,
    shape: AttentionShape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    scale: f32,
    mask: Option<AttentionMask<'_>>,
    out: &mut [f32],
) -> Result<()> {
    check(shape, q, k, v, mask, out)?;
    let AttentionShape { query_heads, kv_heads, queries, keys, head_dim, .. } = shape;
    if out.is_empty() {
        return Ok(());
    }
    if keys == 0 {
        out.fill(f32::NAN); // a softmax over no keys: 0 / 0
        return Ok(());
    }
    let group = query_heads / kv_heads;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Blocks of at most QUERY_BLOCK rows, equal in size and as many per batch as makes the
    // item count a multiple of the cores, so that the workers run out of work together.
    let blocks = queries.div_ceil(QUERY_BLOCK).next_multiple_of(cores / gcd(cores, shape.batch));
    let block_rows = queries.div_ceil(blocks);
    let mut items = Vec::new();
    for (batch, batch_out) in out.chunks_mut(queries * query_heads * head_dim).enumerate() {
        for (block, out) in batch_out.chunks_mut(block_rows * query_heads * head_dim).enumerate() {
            items.push(Item { batch, first_row: block * block_rows, out });
        }
    }
    let workers = cores.min(items.len());
    // Per head, values contiguous and keys packed in tiles (`[key tiles, head_dim, 16]`) for
    // the tiled products, or transposed (`[head_dim, keys]`) for the BLAS: both products then
    // read their right-hand side along its rows.
    let (k, scores_stride) = match products {
        Products::Tiled => (packed_keys(k, keys, kv_heads, head_dim), tiles::key_tiles(keys) * tiles::KEY_TILE),
        Products::Blas => (keys_transposed(k, keys, kv_heads, head_dim), keys),
    };
    let v = heads_first(v, keys, kv_heads, head_dim);
    let context = Context { shape, q, k: &k, v: &v, scale, mask, group, products, scores_stride };
    if workers <= 1 {
        let mut scratch = Scratch::new(scores_stride, head_dim);
        return items.into_iter().try_for_each(|item| context.run(item, &mut scratch));
    }
    let queue = Mutex::new(items.into_iter());
    let next = || queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).next();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut scratch = Scratch::new(scores_stride, head_dim);
                    while let Some(item) = next() {
                        context.run(item, &mut scratch)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

/// `[batch, len, heads, dim]` → `[batch, heads, len, dim]`, heads spread over the cores.
fn heads_first(x: &[f32], len: usize, heads: usize, dim: usize) -> Vec<f32> {
    per_head(x.len(), len * dim, heads, |head_out, b, h| {
        for (t, row) in head_out.chunks_exact_mut(dim).enumerate() {
            let at = ((b * len + t) * heads + h) * dim;
            row.copy_from_slice(&x[at..at + dim]);
        }
    })
}

/// `[batch, len, heads, dim]` → `[batch, heads, dim, len]`, heads spread over the cores.
fn keys_transposed(x: &[f32], len: usize, heads: usize, dim: usize) -> Vec<f32> {
    per_head(x.len(), dim * len, heads, |head_out, b, h| {
        for t in 0..len {
            let at = ((b * len + t) * heads + h) * dim;
            for (c, &value) in x[at..at + dim].iter().enumerate() {
                head_out[c * len + t] = value;
            }
        }
    })
}

/// `[batch, len, heads, dim]` → per batch and head, [`tiles::pack_keys`]'s
/// `[key tiles, dim, 16]`, heads spread over the cores.
fn packed_keys(x: &[f32], len: usize, heads: usize, dim: usize) -> Vec<f32> {
    let head_len = tiles::key_tiles(len) * dim * tiles::KEY_TILE;
    let batch = x.len().checked_div(len * heads * dim).unwrap_or(0);
    per_head(batch * heads * head_len, head_len, heads, |head_out, b, h| {
        tiles::pack_keys(len, dim, |t| &x[((b * len + t) * heads + h) * dim..], head_out);
    })
}

/// A `[batch, heads, head_len]` buffer of `size` values whose head `(b, h)` is written by
/// `fill(head_out, b, h)`, heads spread over the cores.
fn per_head(size: usize, head_len: usize, heads: usize, fill: impl Fn(&mut [f32], usize, usize) + Sync) -> Vec<f32> {
    let mut out = vec![0f32; size];
    for_row_chunks(&mut out, head_len, |chunk, first_head| {
        for (i, head_out) in chunk.chunks_exact_mut(head_len).enumerate() {
            fill(head_out, (first_head + i) / heads, (first_head + i) % heads);
        }
    });
    out
}

/// The greatest common divisor of `a` and `b`.
fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn check(
    shape: AttentionShape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    mask: Option<AttentionMask<'_>>,
    out: &[f32],
) -> Result<()> {
    let AttentionShape { batch, query_heads, kv_heads, queries, keys, head_dim } = shape;
    let fail = |detail: String| Err(Error::Shape { op: "host.attention", detail });
    let size = |dims: &[usize]| dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let (Some(q_len), Some(kv_len)) =
        (size(&[batch, query_heads, queries, head_dim]), size(&[batch, kv_heads, keys, head_dim]))
    else {
        return fail(format!("{shape:?} overflows"));
    };
    if kv_heads == 0 || !query_heads.is_multiple_of(kv_heads) {
        return fail(format!("{query_heads} query heads do not share {kv_heads} key/value heads"));
    }
    if q.len() != q_len || out.len() != q_len || k.len() != kv_len || v.len() != kv_len {
        return fail(format!(
            "{shape:?} needs q and out of {q_len} values and k, v of {kv_len}; got q {}, k {}, v {}, out {}",
            q.len(),
            k.len(),
            v.len(),
            out.len()
        ));
    }
    if let Some(m) = mask {
        let fits = |extent: usize, full: usize| extent == 1 || extent == full;
        let needed = size(&[m.batch, m.heads, m.rows, keys]);
        if !fits(m.batch, batch)
            || !fits(m.heads, query_heads)
            || !fits(m.rows, queries)
            || needed != Some(m.values.len())
        {
            return fail(format!(
                "mask [{}, {}, {}, {keys}] of {} values does not broadcast to [{batch}, {query_heads}, {queries}, {keys}]",
                m.batch,
                m.heads,
                m.rows,
                m.values.len()
            ));
        }
    }
    Ok(())
}

/// One block of query rows (all heads), and where its output goes.
struct Item<'a> {
    batch: usize,
    first_row: usize,
    out: &'a mut [f32],
}

/// A worker's scores block (rows `scores_stride` apart), per-row softmax sums, and one head's
/// query (then output) rows; room for [`QUERY_BLOCK`] rows rounded up to whole row tiles.
struct Scratch {
    scores: Vec<f32>,
    sums: Vec<f32>,
    rows: Vec<f32>,
}

impl Scratch {
    fn new(scores_stride: usize, head_dim: usize) -> Scratch {
        let rows = QUERY_BLOCK.next_multiple_of(tiles::ROW_TILE);
        Scratch { scores: vec![0.0; rows * scores_stride], sums: vec![0.0; rows], rows: vec![0.0; rows * head_dim] }
    }
}

/// The inputs every work item reads.
struct Context<'a> {
    shape: AttentionShape,
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    scale: f32,
    mask: Option<AttentionMask<'a>>,
    group: usize,
    products: Products,
    /// Values between the starts of two rows of scores.
    scores_stride: usize,
}

impl Context<'_> {
    fn run(&self, item: Item<'_>, scratch: &mut Scratch) -> Result<()> {
        let AttentionShape { queries, query_heads, kv_heads, keys, head_dim: d, .. } = self.shape;
        let Item { batch, first_row, out } = item;
        let q_stride = query_heads * d;
        let rows = out.len() / q_stride;
        // The tiled products work on whole row tiles: the padding rows' queries are zero, their
        // results unused.
        let tiled_rows = rows.next_multiple_of(tiles::ROW_TILE);
        let stride = self.scores_stride;
        let q_block = &self.q[(batch * queries + first_row) * q_stride..];
        let k_head_len = self.k.len() / (self.shape.batch * kv_heads).max(1);
        let sums = &mut scratch.sums[..rows];
        for head in 0..query_heads {
            let kv_index = batch * kv_heads + head / self.group;
            let (k_head, v_head) = (&self.k[kv_index * k_head_len..], &self.v[kv_index * keys * d..]);
            // This head's query rows, contiguous.
            let queries_in = &mut scratch.rows[..tiled_rows * d];
            for (dst, src) in queries_in[..rows * d].chunks_exact_mut(d).zip(q_block.chunks(q_stride)) {
                dst.copy_from_slice(&src[head * d..(head + 1) * d]);
            }
            let scores = &mut scratch.scores[..tiled_rows * stride];
            match self.products {
                Products::Tiled => {
                    queries_in[rows * d..].fill(0.0);
                    tiles::scores(queries_in, tiled_rows, d, k_head, tiles::key_tiles(keys), scores, stride);
                }
                Products::Blas => sgemm_on_calling_thread(
                    1.0,
                    Matrix::new(queries_in, rows, d, d)?,
                    Matrix::new(k_head, d, keys, keys)?,
                    0.0,
                    MatrixMut::new(scores, rows, keys, stride)?,
                )?,
            }
            for (i, (row, sum)) in scores.chunks_exact_mut(stride).zip(sums.iter_mut()).enumerate() {
                let mask_row = self.mask.map(|m| {
                    let at =
                        (((batch % m.batch) * m.heads + head % m.heads) * m.rows + (first_row + i) % m.rows) * keys;
                    &m.values[at..at + keys]
                });
                *sum = exp_shifted_row(&mut row[..keys], self.scale, mask_row);
            }
            let attended = &mut scratch.rows[..tiled_rows * d];
            match self.products {
                Products::Tiled => tiles::weighted_sum(scores, stride, tiled_rows, keys, v_head, d, attended),
                Products::Blas => sgemm_on_calling_thread(
                    1.0,
                    Matrix::new(scores, rows, keys, stride)?,
                    Matrix::new(v_head, keys, d, d)?,
                    0.0,
                    MatrixMut::new(&mut attended[..rows * d], rows, d, d)?,
                )?,
            }
            for ((dst, src), sum) in out.chunks_exact_mut(q_stride).zip(attended.chunks_exact(d)).zip(sums.iter()) {
                let inv = 1.0 / sum;
                dst[head * d..(head + 1) * d].iter_mut().zip(src).for_each(|(o, a)| *o = a * inv);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, salt: usize) -> Vec<f32> {
        (0..n).map(|i| (((i * 7919 + salt * 104_729) % 2003) as f32 / 1001.5 - 1.0) * 1.5).collect()
    }

    /// The tiled products against the BLAS ones (the path CPUs without AVX2 and FMA take), on
    /// blocks whose rows are not whole row tiles and keys not whole key tiles, with grouped
    /// heads, a batch and a per-row mask.
    #[test]
    fn tiled_and_blas_products_agree() {
        if !tiles::available(8) {
            return;
        }
        for (batch, kv_heads, group, queries, keys, head_dim) in
            [(1, 1, 1, 7, 5, 8), (2, 2, 3, 131, 37, 72), (1, 1, 2, 300, 290, 64), (3, 1, 1, 13, 16, 16)]
        {
            let shape = AttentionShape { batch, query_heads: kv_heads * group, kv_heads, queries, keys, head_dim };
            let q = values(batch * queries * shape.query_heads * head_dim, 1);
            let (k, v) = (values(batch * keys * kv_heads * head_dim, 2), values(batch * keys * kv_heads * head_dim, 3));
            let mask_values: Vec<f32> = values(batch * queries * keys, 4)
                .iter()
                .map(|&x| if x < -1.2 { f32::NEG_INFINITY } else { x })
                .collect();
            let mask = AttentionMask { values: &mask_values, batch, heads: 1, rows: queries };
            let (mut tiled, mut blas) = (vec![0f32; q.len()], vec![0f32; q.len()]);
            attention_with(Products::Tiled, shape, &q, &k, &v, 0.4, Some(mask), &mut tiled).unwrap();
            attention_with(Products::Blas, shape, &q, &k, &v, 0.4, Some(mask), &mut blas).unwrap();
            for (i, (t, b)) in tiled.iter().zip(&blas).enumerate() {
                assert!((t - b).abs() <= 1e-5 * (1.0 + b.abs()), "{shape:?} element {i}: {t} vs {b}");
            }
        }
    }
}
