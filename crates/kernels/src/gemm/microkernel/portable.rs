//! The portable micro-kernel: the tile's accumulators in fixed-size arrays, left to the
//! compiler's auto-vectoriser (across the tile's columns; each accumulator's k order stays).
//! Every float32 step goes through a [`MultiplyAdd`] rule: the kernel table takes
//! [`TargetMultiplyAdd`](crate::gemm::arithmetic::TargetMultiplyAdd) (fused on aarch64, where this
//! is the kernel that runs), tests either.

use crate::gemm::arithmetic::{MultiplyAdd, round_bf16};
use crate::gemm::tile::{MR, NR, TILE};

/// [`TileFn`](crate::gemm::tile::TileFn)'s contract (no prefetch).
///
/// # Safety
/// `a` must be valid for `kc · MR` reads, `b` for `kc · NR` reads, `c` for `MR · NR` reads and
/// writes, the three not overlapping `c`.
pub(crate) unsafe fn tile<R: MultiplyAdd>(
    kc: usize,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    accumulate: bool,
    _next: *const f32,
    _next_len: usize,
) {
    // SAFETY: the extents are the caller's guarantee.
    let (a, b, c) = unsafe {
        (std::slice::from_raw_parts(a, kc * MR), std::slice::from_raw_parts(b, kc * NR), &mut *c.cast::<[f32; TILE]>())
    };
    tile_slices::<R>(a, b, c, accumulate);
}

/// `c = (accumulate ? c : 0) + a · b`, `a` = `kc × MR` and `b` = `kc × NR` packed (k-major),
/// each step `acc = R(acc + a·b)`.
pub(crate) fn tile_slices<R: MultiplyAdd>(a: &[f32], b: &[f32], c: &mut [f32; TILE], accumulate: bool) {
    let mut acc = [[0.0f32; NR]; MR];
    if accumulate {
        for (row, src) in acc.iter_mut().zip(c.chunks_exact(NR)) {
            row.copy_from_slice(src);
        }
    }
    for (a_k, b_k) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        for (row, &x) in acc.iter_mut().zip(a_k) {
            for (acc, &y) in row.iter_mut().zip(b_k) {
                *acc = R::mul_add(x, y, *acc);
            }
        }
    }
    for (dst, row) in c.chunks_exact_mut(NR).zip(&acc) {
        dst.copy_from_slice(row);
    }
}

/// [`GroupedTileFn`](crate::gemm::tile::GroupedTileFn)'s contract (no prefetch): each group's sums
/// from [`tile_slices`], then `c = R(c + s · P)`.
///
/// # Safety
/// `kc` is a multiple of `group` (`group > 0`); `a` must be valid for `kc · MR` reads, `b` for
/// `kc · NR`, `scales` for `kc / group · NR`, `c` for `MR · NR` reads and writes, none
/// overlapping `c`.
#[allow(clippy::too_many_arguments, reason = "the GroupedTileFn signature")]
pub(crate) unsafe fn tile_grouped<R: MultiplyAdd>(
    kc: usize,
    group: usize,
    a: *const f32,
    b: *const f32,
    scales: *const f32,
    c: *mut f32,
    _next: *const f32,
    _next_len: usize,
) {
    let groups = kc / group;
    // SAFETY: the extents are the caller's guarantee.
    let (a, b, scales, c) = unsafe {
        (
            std::slice::from_raw_parts(a, kc * MR),
            std::slice::from_raw_parts(b, kc * NR),
            std::slice::from_raw_parts(scales, groups * NR),
            &mut *c.cast::<[f32; TILE]>(),
        )
    };
    let mut partial = [0.0f32; TILE];
    for ((a, b), scales) in a.chunks_exact(group * MR).zip(b.chunks_exact(group * NR)).zip(scales.chunks_exact(NR)) {
        tile_slices::<R>(a, b, &mut partial, false);
        for (c, p) in c.chunks_exact_mut(NR).zip(partial.chunks_exact(NR)) {
            for ((c, &p), &s) in c.iter_mut().zip(p).zip(scales) {
                *c = R::mul_add(s, p, *c);
            }
        }
    }
}

/// [`TileFn`](crate::gemm::tile::TileFn)'s contract in bf16 arithmetic (no prefetch): for
/// each k, `acc = bf16(acc + bf16(a_i · b_j))`, each rounding [`round_bf16`].
///
/// # Safety
/// `a` must be valid for `kc · MR` reads, `b` for `kc · NR` reads, `c` for `MR · NR` reads and
/// writes, the three not overlapping `c`.
pub(crate) unsafe fn tile_bf16(
    kc: usize,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    accumulate: bool,
    _next: *const f32,
    _next_len: usize,
) {
    // SAFETY: the extents are the caller's guarantee.
    let (a, b, c) = unsafe {
        (std::slice::from_raw_parts(a, kc * MR), std::slice::from_raw_parts(b, kc * NR), &mut *c.cast::<[f32; TILE]>())
    };
    let mut acc = [[0.0f32; NR]; MR];
    if accumulate {
        for (row, src) in acc.iter_mut().zip(c.chunks_exact(NR)) {
            row.copy_from_slice(src);
        }
    }
    for (a_k, b_k) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        for (row, &x) in acc.iter_mut().zip(a_k) {
            for (acc, &y) in row.iter_mut().zip(b_k) {
                let product = round_bf16(x * y);
                *acc = round_bf16(*acc + product);
            }
        }
    }
    for (dst, row) in c.chunks_exact_mut(NR).zip(&acc) {
        dst.copy_from_slice(row);
    }
}
