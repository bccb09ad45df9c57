//! The loops around the micro-kernel: cache blocking (BLIS's five loops) and the split over
//! threads, for any [`RightOperand`] (dense, or dequantized as it is packed) and either
//! [`Arithmetic`].
//!
//! For each block of `nc` output columns, `b` is packed once (all of k, in parallel over its
//! panels) and shared; the rows are then split into blocks of `mc` rows, one task each, in
//! parallel. A task packs its rows of `a` one k block (`kc`) at a time (or, with several column
//! blocks, reads them from `a` packed once for all of them) and runs the micro-kernel over
//! every tile of its block; between k blocks the tiles' accumulators wait in an `f32` buffer,
//! and after the last one the epilogue stores them. With a grouped k-sum the k blocks hold
//! whole groups, which join the accumulators one by one ([`groups`](super::groups)). Every
//! output is computed by exactly one task, in the same order whatever the blocking, so neither
//! the blocking nor the number of threads changes a bit.

use super::arithmetic::Arithmetic;
use super::epilogue::Epilogue;
use super::groups::accumulate_groups;
use super::magnitudes::{Magnitudes, products_are_exact};
use super::matrix::MatRef;
use super::microkernel::{MicroKernel, Steps, TileKernel};
use super::pack::pack_a;
use super::right_operand::RightOperand;
use super::tile::{MR, NR, TILE, prefetch_share};
use crate::elementwise::clip_scalar;
use crate::gemm::scratch::{with_scratch, with_shared};
use crate::{ElementType, Float};
use rayon::prelude::*;

/// Largest k block: a `kc × NR` panel of `b` (16 KiB) stays in L1 while the tile loop runs.
const KC_MAX: usize = 256;
/// Largest row block (its packed `a`, `mc × kc`, 48 KiB, stays in L2).
const MC_MAX: usize = 48;
/// Columns per block: a task's accumulator tiles (`mc × nc`, 48 KiB) stay in L1/L2 beside its
/// packed `a`.
const NC: usize = 256;
/// Columns per block when `a` is too large to share: fewer blocks, fewer repacks of `a`.
const NC_UNSHARED: usize = 1024;
/// Largest `a` (in floats) packed once and shared by the column blocks.
const SHARED_A_MAX: usize = 16 << 20;

/// The cache blocking of one product: rows per task (`mc`, a multiple of the tile's rows), the
/// longest k block (`kc`; k is split into equal blocks no longer than this) and the columns
/// packed at a time (`nc`, a multiple of the tile's columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocking {
    mc: usize,
    kc: usize,
    nc: usize,
}

impl Blocking {
    /// A blocking with at least the given extents, rounded up to whole tiles.
    pub fn new(mc: usize, kc: usize, nc: usize) -> Blocking {
        Blocking { mc: mc.max(1).next_multiple_of(MR), kc: kc.max(1), nc: nc.max(1).next_multiple_of(NR) }
    }

    /// The blocking [`gemm`](super::gemm) uses for an `m × k` by `k × n` product on this
    /// machine's thread count.
    pub fn for_shape(m: usize, k: usize, n: usize) -> Blocking {
        // Row blocks small enough that the threads finish together (rayon balances many
        // tasks), large enough that each reuses a packed panel of `b` over many tiles.
        let mc = m.div_ceil(2 * crate::parallel::threads()).clamp(1, MC_MAX);
        let shared = m.next_multiple_of(MR).saturating_mul(k) <= SHARED_A_MAX;
        let nc = if shared { NC } else { NC_UNSHARED }.min(n.max(1));
        Blocking::new(mc, KC_MAX, nc)
    }
}

/// One product as the driver runs it: `a` (clipped by `a_clip` and cast to `O` as it is
/// packed), the right operand, the arithmetic of the k-sum, and the store.
pub(crate) struct Product<'a, A, R, O> {
    pub(crate) a: MatRef<'a, A>,
    pub(crate) a_clip: Option<(f32, f32)>,
    pub(crate) b: &'a R,
    pub(crate) arithmetic: Arithmetic,
    pub(crate) epilogue: Epilogue<'a, O>,
}

/// The fast path of [`gemm_with`](super::gemm_with) (and of the quantized products), on
/// arguments that passed their checks: `(m, k, n)` the extents, `out` `m · n` values. With
/// [`RightOperand::group`], `k` is a multiple of the group; with [`Arithmetic::Bf16`], `O` is
/// bf16.
pub(crate) fn run<A: Float, R: RightOperand, O: Float>(
    kernel: MicroKernel,
    blocking: Blocking,
    (m, k, n): (usize, usize, usize),
    product: &Product<'_, A, R, O>,
    out: &mut [O],
) {
    if m == 0 || n == 0 {
        return;
    }
    let Product { a, a_clip, b, arithmetic, .. } = *product;
    if k == 0 {
        empty_product(out, n, &product.epilogue);
        return;
    }
    let group = b.group();
    let k_blocks = k.div_ceil(blocking.kc);
    let kc = k.div_ceil(k_blocks).next_multiple_of(group.unwrap_or(1));
    let nc = blocking.nc.min(n.next_multiple_of(NR));
    let groups_len = group.map_or(0, |group| k / group * NR);
    let isa = kernel.isa();
    let tile_kernel = TileKernel::new(isa);
    // FMA may replace the separate multiply and add where both operands hold bf16 values and
    // their magnitudes make every product exact (see `magnitudes`). A bf16 `a` clipped to a
    // float32 bound that is not a bf16 value may hold that bound.
    let is_bf16 = |x: f32| x.to_bits() & 0xFFFF == 0;
    let a_bf16 = O::DTYPE == ElementType::Bf16
        || (A::DTYPE == ElementType::Bf16 && a_clip.is_none_or(|(lo, hi)| is_bf16(lo) && is_bf16(hi)));
    let exact_possible = tile_kernel.fma_when_exact() && arithmetic == Arithmetic::F32 && a_bf16 && b.bf16_values();
    let steps = match arithmetic {
        Arithmetic::F32 => Steps::Mlx,
        Arithmetic::Bf16 => Steps::Bf16,
    };
    // With several column blocks, `a` is packed once for all of them (when it is not huge):
    // row block `t` at `t · mc · k`, its k blocks one after the other, as `pack_a` lays them.
    let share_a = n > nc && m.next_multiple_of(MR) * k <= SHARED_A_MAX;
    let shared_a_len = if share_a { m.next_multiple_of(MR) * k } else { 0 };
    with_shared(shared_a_len, |shared_a| {
        let shared_a: Option<(&[f32], Magnitudes)> = if share_a {
            let magnitudes = shared_a
                .par_chunks_mut(blocking.mc * k)
                .enumerate()
                .map(|(t, dst)| {
                    let (i0, rows) = (t * blocking.mc, blocking.mc.min(m - t * blocking.mc));
                    let panels = rows.div_ceil(MR);
                    for p0 in (0..k).step_by(kc) {
                        let kcur = kc.min(k - p0);
                        pack_a::<A, O>(isa, &a, a_clip, (i0, rows), (p0, kcur), &mut dst[panels * MR * p0..]);
                    }
                    if exact_possible { Magnitudes::of(dst, isa) } else { Magnitudes::EMPTY }
                })
                .reduce(|| Magnitudes::EMPTY, Magnitudes::merge);
            Some((&*shared_a, magnitudes))
        } else {
            None
        };
        let panels_max = nc / NR;
        with_shared(k * nc + panels_max * groups_len, |packed| {
            let (packed_b, packed_scales) = packed.split_at_mut(k * nc);
            for j0 in (0..n).step_by(nc) {
                let cols = nc.min(n - j0);
                let panels = cols.div_ceil(NR);
                let packed_b = &mut packed_b[..panels * k * NR];
                let b_magnitudes = packed_b
                    .par_chunks_mut(k * NR)
                    .enumerate()
                    .map(|(p, dst)| {
                        b.pack_panel(j0 + p * NR, (cols - p * NR).min(NR), dst, isa);
                        if exact_possible { Magnitudes::of(dst, isa) } else { Magnitudes::EMPTY }
                    })
                    .reduce(|| Magnitudes::EMPTY, Magnitudes::merge);
                let groups = group.map(|group| {
                    let scales = &mut packed_scales[..panels * groups_len];
                    for (p, dst) in scales.chunks_exact_mut(groups_len).enumerate() {
                        b.pack_group_scales(j0 + p * NR, (cols - p * NR).min(NR), dst);
                    }
                    (&*scales, group)
                });
                let packed_b = &*packed_b;
                let block = ColumnBlock { j0, cols, packed_b, k, kc, exact_possible, b_magnitudes, steps, groups };
                out.par_chunks_mut(blocking.mc * n).enumerate().for_each(|(t, rows)| {
                    let i0 = t * blocking.mc;
                    let packed_a = shared_a.map(|(packed, magnitudes)| (&packed[i0 * k..], magnitudes));
                    row_block(tile_kernel, product, packed_a, &block, i0, rows, n);
                });
            }
        });
    });
}

/// One packed block of `b`'s columns, shared by the row tasks.
struct ColumnBlock<'a> {
    j0: usize,
    cols: usize,
    packed_b: &'a [f32],
    k: usize,
    kc: usize,
    /// Whether the operands hold bf16 values (FMA is then exact where magnitudes allow).
    exact_possible: bool,
    b_magnitudes: Magnitudes,
    /// How the k steps round when FMA is not exact.
    steps: Steps,
    /// With a grouped k-sum, the packed factors (`K / group · NR` per panel) and the group.
    groups: Option<(&'a [f32], usize)>,
}

/// Rows `i0..` of the output (`out` holds whole rows of `n`), columns of `block`; `a` packed
/// here one k block at a time unless `shared_a` holds these rows packed already.
fn row_block<A: Float, R: RightOperand, O: Float>(
    kernel: TileKernel,
    product: &Product<'_, A, R, O>,
    shared_a: Option<(&[f32], Magnitudes)>,
    block: &ColumnBlock<'_>,
    i0: usize,
    out: &mut [O],
    n: usize,
) {
    let epilogue = &product.epilogue;
    let isa = epilogue.isa;
    let rows = out.len() / n;
    let row_panels = rows.div_ceil(MR);
    let col_panels = block.cols.div_ceil(NR);
    let (k, kc) = (block.k, block.kc);
    let packed_a_len = if shared_a.is_some() { 0 } else { row_panels * kc * MR };
    with_scratch(packed_a_len + row_panels * col_panels * TILE, |scratch| {
        let (own_a, tiles) = scratch.split_at_mut(packed_a_len);
        let (tiles, _) = tiles.as_chunks_mut::<TILE>();
        for p0 in (0..k).step_by(kc) {
            let kcur = kc.min(k - p0);
            let (first, last) = (p0 == 0, p0 + kcur == k);
            let (packed_a, a_magnitudes): (&[f32], Magnitudes) = match shared_a {
                Some((shared, magnitudes)) => (&shared[row_panels * MR * p0..], magnitudes),
                None => {
                    pack_a::<A, O>(isa, &product.a, product.a_clip, (i0, rows), (p0, kcur), own_a);
                    let packed = &own_a[..row_panels * kcur * MR];
                    let magnitudes = if block.exact_possible { Magnitudes::of(packed, isa) } else { Magnitudes::EMPTY };
                    (packed, magnitudes)
                }
            };
            let exact = block.exact_possible && products_are_exact(a_magnitudes, block.b_magnitudes);
            let steps = if exact { Steps::Fused } else { block.steps };
            // The panel of `b` after this one (the next column panel, or the first of the next
            // k block): each row panel's call prefetches its share of it.
            let next_b = |jp: usize| -> &[f32] {
                if jp + 1 < col_panels {
                    &block.packed_b[(jp + 1) * k * NR + p0 * NR..][..kcur * NR]
                } else if !last {
                    &block.packed_b[(p0 + kcur) * NR..][..kc.min(k - p0 - kcur) * NR]
                } else {
                    &[]
                }
            };
            for jp in 0..col_panels {
                let jl = jp * NR;
                let cols = NR.min(block.cols - jl);
                let jg = block.j0 + jl;
                let b_panel = &block.packed_b[jp * k * NR + p0 * NR..][..kcur * NR];
                let next = next_b(jp);
                // Row panels two at a time where the k-sum is one sum (both tiles share `b`'s
                // panel), one at a time otherwise and for the last of an odd count.
                let mut ip = 0;
                while ip < row_panels {
                    let a_panel = |ip: usize| &packed_a[ip * kcur * MR..];
                    let next_of = |ip: usize, count: usize| prefetch_share(next, row_panels, (ip, count));
                    let first_tile = jp * row_panels + ip;
                    let pair = match block.groups {
                        None if ip + 1 < row_panels => tiles[first_tile..].first_chunk_mut::<2>(),
                        _ => None,
                    };
                    let count = if let Some(pair) = pair {
                        let [t0, t1] = &mut *pair;
                        let accumulate = !first || (epilogue.init(jg, cols, t0) & epilogue.init(jg, cols, t1));
                        let panels = ([a_panel(ip), a_panel(ip + 1)], b_panel);
                        kernel.run_pair(steps, kcur, panels, pair, accumulate, next_of(ip, 2));
                        2
                    } else {
                        let tile = &mut tiles[first_tile];
                        let (a_panel, next) = (a_panel(ip), next_of(ip, 1));
                        match block.groups {
                            None => {
                                let accumulate = !first || epilogue.init(jg, cols, tile);
                                kernel.run_steps(steps, kcur, (a_panel, b_panel), tile, accumulate, next);
                            }
                            Some((scales, group)) => {
                                if first {
                                    // The accumulator starts at +0, before the first group joins it.
                                    tile.fill(0.0);
                                }
                                let scales = &scales[jp * (k / group) * NR + p0 / group * NR..];
                                let kinds = (steps, product.arithmetic);
                                accumulate_groups(
                                    kernel,
                                    kinds,
                                    group,
                                    kcur,
                                    (a_panel, b_panel),
                                    scales,
                                    tile,
                                    next,
                                    isa,
                                );
                            }
                        }
                        1
                    };
                    if last {
                        for ip in ip..ip + count {
                            let r0 = ip * MR;
                            let tile = &tiles[jp * row_panels + ip];
                            epilogue.store(tile, MR.min(rows - r0), jg, cols, &mut out[r0 * n + jg..], n);
                        }
                    }
                    ip += count;
                }
            }
        }
    });
}

/// MLX's product with `K = 0`: zeros, or the bias copied into every row; then the clip.
fn empty_product<O: Float>(out: &mut [O], n: usize, epilogue: &Epilogue<'_, O>) {
    for row in out.chunks_exact_mut(n) {
        for (j, d) in row.iter_mut().enumerate() {
            let value = epilogue.bias.map_or(O::default(), |bias| bias[j]);
            *d = match epilogue.out_clip {
                Some((lo, hi)) => clip_scalar(value, Some(lo), Some(hi)),
                None => value,
            };
        }
    }
}
