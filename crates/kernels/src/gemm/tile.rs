//! The register tile every micro-kernel computes: its extents and the signature of a function
//! that computes it. The micro-kernels, the packing, the store and the drivers (here and in
//! `attention`) all depend on this file and on nothing of each other.

/// Rows of the register tile.
pub(crate) const MR: usize = 6;
/// Columns of the register tile (two AVX vectors).
pub(crate) const NR: usize = 16;
/// Accumulators of one tile.
pub(crate) const TILE: usize = MR * NR;
/// Floats per cache line (the prefetch granule).
pub(crate) const LINE: usize = 16;

/// The part of a following panel `next` that calls `first..first + count` of `calls` tile
/// calls prefetch (`calls ≥ 1`): each call's share is whole lines, so that the calls together
/// cover `next`; empty past its end.
pub(crate) fn prefetch_share(next: &[f32], calls: usize, (first, count): (usize, usize)) -> &[f32] {
    let share = next.len().div_ceil(calls).next_multiple_of(LINE);
    next.get(first * share..).map_or(&[], |rest| &rest[..(count * share).min(rest.len())])
}

/// The signature of a tile function: `f(kc, a, b, c, accumulate, next, next_len)` updates the
/// `MR × NR` tile at `c` with `kc` steps of the packed panels `a` (`kc × MR`) and `b`
/// (`kc × NR`), starting from the tile's values when `accumulate`, from zeros otherwise; it may
/// prefetch the `next_len` floats at `next` (a hint, never read).
pub(crate) type TileFn = unsafe fn(usize, *const f32, *const f32, *mut f32, bool, *const f32, usize);

/// The signature of a grouped tile function (float32 arithmetic):
/// `f(kc, group, a, b, scales, c, next, next_len)` runs the `kc / group` groups of `group` steps
/// of the packed panels `a` and `b` in order; each group's sums `P` start from zero and join
/// the tile as `c[i][j] = c[i][j] + round(scales[g · NR + j] · P[i][j])`. It may prefetch the
/// `next_len` floats at `next` (a hint, never read).
pub(crate) type GroupedTileFn =
    unsafe fn(usize, usize, *const f32, *const f32, *const f32, *mut f32, *const f32, usize);

/// The signature of a pair-tile function: `f(kc, [a0, a1], b, [c0, c1], accumulate, next,
/// next_len)` is [`TileFn`] on the tiles `c0` (panel `a0`) and `c1` (panel `a1`), which share
/// the panel `b`: the same bits as two calls of a tile function.
pub(crate) type PairTileFn = unsafe fn(usize, [*const f32; 2], *const f32, [*mut f32; 2], bool, *const f32, usize);

/// The lines of a tile's `next` panel (`len` floats), one per [`advance`](Self::advance), for
/// the tile's prefetches: it stays on the last line once the panel is covered (no branch in the
/// tiles' loops), and without a panel (`len == 0`) it stays on `fallback` (the current panel of
/// `b`, in L1 already). Its addresses are only prefetched, never read.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct NextLines {
    at: *const f32,
    last: *const f32,
}

#[cfg(target_arch = "x86_64")]
impl NextLines {
    #[inline(always)]
    pub(crate) fn new(next: *const f32, len: usize, fallback: *const f32) -> NextLines {
        if len == 0 {
            NextLines { at: fallback, last: fallback }
        } else {
            NextLines { at: next, last: next.wrapping_add((len - 1) / LINE * LINE) }
        }
    }

    /// The line to prefetch now; the walk moves on to the next.
    #[inline(always)]
    pub(crate) fn advance(&mut self) -> *const f32 {
        let at = self.at;
        self.at = if at < self.last { at.wrapping_add(LINE) } else { self.last };
        at
    }
}
