//! The register tile every micro-kernel computes: its extents and the signature of a function
//! that computes it. The micro-kernels, the packing, the store and the drivers (here and in
//! `attention`) all depend on this file and on nothing of each other.

/// Rows of the register tile.
pub(crate) const MR: usize = 6;
/// Columns of the register tile (two AVX vectors).
pub(crate) const NR: usize = 16;
/// Accumulators of one tile.
pub(crate) const TILE: usize = MR * NR;

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
