//! Scaled dot-product attention over host float32 buffers, in query blocks that stay in cache.

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
/// per head, a block's scores come from the linked BLAS (on the worker's thread alone where the
/// BLAS allows it per call, see [`mlx_ffi::blas::sgemm_on_calling_thread`]; its process-wide
/// thread count is never changed, as that changes the bits of concurrent MLX matmuls), are
/// exponentiated in place with the vectorised exponential and multiplied with `v`, and the
/// result rows are divided by their softmax sums. Accurate to float32 rounding of the exact
/// function; a row whose scores are all `-∞` gives NaN, as a softmax does.
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
    // Per head, keys transposed (`[head_dim, keys]`) and values contiguous: both products then
    // read their right-hand side along its rows, as the BLAS's row-vector kernels want.
    let (k, v) = (keys_transposed(k, keys, kv_heads, head_dim), heads_first(v, keys, kv_heads, head_dim));
    let context = Context { shape, q, k: &k, v: &v, scale, mask, group };
    if workers <= 1 {
        let mut scratch = Scratch::new(keys, head_dim);
        return items.into_iter().try_for_each(|item| context.run(item, &mut scratch));
    }
    let queue = Mutex::new(items.into_iter());
    let next = || queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).next();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut scratch = Scratch::new(keys, head_dim);
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

/// A worker's scores block, per-row softmax sums, and one head's query (then output) rows.
struct Scratch {
    scores: Vec<f32>,
    sums: Vec<f32>,
    rows: Vec<f32>,
}

impl Scratch {
    fn new(keys: usize, head_dim: usize) -> Scratch {
        Scratch {
            scores: vec![0.0; QUERY_BLOCK * keys],
            sums: vec![0.0; QUERY_BLOCK],
            rows: vec![0.0; QUERY_BLOCK * head_dim],
        }
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
}

impl Context<'_> {
    fn run(&self, item: Item<'_>, scratch: &mut Scratch) -> Result<()> {
        let AttentionShape { queries, query_heads, kv_heads, keys, head_dim: d, .. } = self.shape;
        let Item { batch, first_row, out } = item;
        let q_stride = query_heads * d;
        let rows = out.len() / q_stride;
        let q_block = &self.q[(batch * queries + first_row) * q_stride..];
        let kv_at = batch * kv_heads * keys * d;
        let scores = &mut scratch.scores[..rows * keys];
        let sums = &mut scratch.sums[..rows];
        for head in 0..query_heads {
            let kv_head = kv_at + head / self.group * keys * d;
            // This head's query rows, contiguous.
            let queries_in = &mut scratch.rows[..rows * d];
            for (dst, src) in queries_in.chunks_exact_mut(d).zip(q_block.chunks(q_stride)) {
                dst.copy_from_slice(&src[head * d..(head + 1) * d]);
            }
            sgemm_on_calling_thread(
                1.0,
                Matrix::new(queries_in, rows, d, d)?,
                Matrix::new(&self.k[kv_head..], d, keys, keys)?,
                0.0,
                MatrixMut::new(scores, rows, keys, keys)?,
            )?;
            for (i, (row, sum)) in scores.chunks_exact_mut(keys).zip(sums.iter_mut()).enumerate() {
                let mask_row = self.mask.map(|m| {
                    let at =
                        (((batch % m.batch) * m.heads + head % m.heads) * m.rows + (first_row + i) % m.rows) * keys;
                    &m.values[at..at + keys]
                });
                *sum = exp_shifted_row(row, self.scale, mask_row);
            }
            let attended = &mut scratch.rows[..rows * d];
            sgemm_on_calling_thread(
                1.0,
                Matrix::new(scores, rows, keys, keys)?,
                Matrix::new(&self.v[kv_head..], keys, d, d)?,
                0.0,
                MatrixMut::new(attended, rows, d, d)?,
            )?;
            for ((dst, src), sum) in out.chunks_exact_mut(q_stride).zip(attended.chunks_exact(d)).zip(sums.iter()) {
                let inv = 1.0 / sum;
                dst[head * d..(head + 1) * d].iter_mut().zip(src).for_each(|(o, a)| *o = a * inv);
            }
        }
        Ok(())
    }
}
