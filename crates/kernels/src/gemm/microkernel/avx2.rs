//! The AVX2 micro-kernels: 6 × 16 accumulators in twelve `__m256` registers; per k step two
//! loads of `b`, six broadcasts of `a`, and for each accumulator a `_mm256_mul_ps` then a
//! `_mm256_add_ps` (the product rounded before the add, as MLX's CPU matmul rounds it), or,
//! where every product is exact, one `_mm256_fmadd_ps` (the same bits, fewer instructions).
//!
//! The k loop runs four steps per iteration (fewer loop instructions: the separate kernel's
//! 32 instructions per step leave the core's dispatch little room) and prefetches into L1 the
//! part of `a` a few iterations ahead and, one cache line per iteration, the memory the caller
//! reads next (the next panel of `b`), so that neither waits on L2 when its turn comes.
//!
//! The grouped kernel runs the same steps a group at a time, from zeros, and after each group
//! adds the scaled sums into the tile in memory (`c + round(s · P)`, a multiply then an add).

use crate::cpu::Avx2;
use crate::gemm::tile::{GroupedTileFn, TileFn};

/// The AVX2 tile functions, `(separate, fused)`, for the CPU the token vouches for.
pub(crate) fn tiles(_: Avx2) -> (TileFn, TileFn) {
    (x86::tile_6x16::<false>, x86::tile_6x16::<true>)
}

/// The AVX2 grouped tile functions, `(separate, fused)`, for the CPU the token vouches for.
pub(crate) fn grouped_tiles(_: Avx2) -> (GroupedTileFn, GroupedTileFn) {
    (x86::grouped_6x16::<false>, x86::grouped_6x16::<true>)
}

/// The AVX2 tile function of bf16 arithmetic, for the CPU the token vouches for.
pub(crate) fn bf16_tile(_: Avx2) -> TileFn {
    bf16::tile_6x16
}

mod x86 {
    use crate::gemm::tile::{LINE, MR, NR, NextLines};
    use std::arch::x86_64::*;

    /// k steps per iteration of the main loop.
    const UNROLL: usize = 4;
    /// How far ahead of the current k step `a` is prefetched, in floats (32 steps).
    const A_AHEAD: usize = 32 * MR;

    /// [`TileFn`](crate::gemm::tile::TileFn)'s contract for the 6 × 16 tile; `FUSED` uses
    /// `fma(a, b, acc)` for `acc + round(a · b)` (the same bits only where every product is
    /// exact, which the caller checks).
    ///
    /// # Safety
    /// AVX2 and FMA must be available; `a` must be valid for `kc · MR` reads, `b` for `kc · NR`
    /// reads, `c` for `MR · NR` reads and writes. `next` (`next_len` floats) is only
    /// prefetched, never read: any address is sound.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile_6x16<const FUSED: bool>(
        kc: usize,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        accumulate: bool,
        next: *const f32,
        next_len: usize,
    ) {
        const _: () = assert!(MR == 6 && NR == 16);
        // SAFETY: every pointer offset below that is read stays within the extents the caller
        // guarantees (`a` below `kc · MR`, `b` below `kc · NR`, `c` below `MR · NR`); the
        // prefetches (`a` ahead, `next`) are hints that never fault, computed with
        // `wrapping_add` so that they need not lie inside any allocation.
        unsafe {
            let mut acc = [[_mm256_setzero_ps(); 2]; MR];
            if accumulate {
                for (i, row) in acc.iter_mut().enumerate() {
                    row[0] = _mm256_loadu_ps(c.add(i * NR));
                    row[1] = _mm256_loadu_ps(c.add(i * NR + 8));
                }
            }
            // One k step: `acc[i][·] += a[i] · b[·]`, `a` and `b` pointing at the step's values.
            macro_rules! step {
                ($a:expr, $b:expr) => {{
                    let (a, b): (*const f32, *const f32) = ($a, $b);
                    let b0 = _mm256_loadu_ps(b);
                    let b1 = _mm256_loadu_ps(b.add(8));
                    for (i, row) in acc.iter_mut().enumerate() {
                        let x = _mm256_broadcast_ss(&*a.add(i));
                        if FUSED {
                            row[0] = _mm256_fmadd_ps(x, b0, row[0]);
                            row[1] = _mm256_fmadd_ps(x, b1, row[1]);
                        } else {
                            row[0] = _mm256_add_ps(row[0], _mm256_mul_ps(x, b0));
                            row[1] = _mm256_add_ps(row[1], _mm256_mul_ps(x, b1));
                        }
                    }
                }};
            }
            let (mut a, mut b) = (a, b);
            let mut next = NextLines::new(next, next_len, b);
            // (Counting `k` down in `while` loops, rather than `for` over ranges, lets LLVM keep
            // the twelve accumulators in registers without spilling.)
            let mut k = kc;
            while k >= UNROLL {
                // Four steps read 24 floats of `a`: one or two lines.
                _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add(A_AHEAD).cast());
                _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add(A_AHEAD + LINE).cast());
                _mm_prefetch::<_MM_HINT_T0>(next.advance().cast());
                for u in 0..UNROLL {
                    step!(a.add(u * MR), b.add(u * NR));
                }
                a = a.add(UNROLL * MR);
                b = b.add(UNROLL * NR);
                k -= UNROLL;
            }
            while k > 0 {
                step!(a, b);
                a = a.add(MR);
                b = b.add(NR);
                k -= 1;
            }
            for (i, row) in acc.iter().enumerate() {
                _mm256_storeu_ps(c.add(i * NR), row[0]);
                _mm256_storeu_ps(c.add(i * NR + 8), row[1]);
            }
        }
    }

    /// [`GroupedTileFn`](crate::gemm::tile::GroupedTileFn)'s contract for the 6 × 16 tile;
    /// `FUSED` as for [`tile_6x16`].
    ///
    /// # Safety
    /// AVX2 and FMA must be available; `kc` a multiple of `group` (`group > 0`); `a` valid for
    /// `kc · MR` reads, `b` for `kc · NR`, `scales` for `kc / group · NR`, `c` for `MR · NR`
    /// reads and writes. `next` is only prefetched.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments, reason = "the GroupedTileFn signature")]
    pub(super) unsafe fn grouped_6x16<const FUSED: bool>(
        kc: usize,
        group: usize,
        a: *const f32,
        b: *const f32,
        scales: *const f32,
        c: *mut f32,
        next: *const f32,
        next_len: usize,
    ) {
        const _: () = assert!(MR == 6 && NR == 16);
        // SAFETY: as in `tile_6x16`; the groups read `scales` below `kc / group · NR`.
        unsafe {
            macro_rules! step {
                ($acc:expr, $a:expr, $b:expr) => {{
                    let (a, b): (*const f32, *const f32) = ($a, $b);
                    let b0 = _mm256_loadu_ps(b);
                    let b1 = _mm256_loadu_ps(b.add(8));
                    for (i, row) in $acc.iter_mut().enumerate() {
                        let x = _mm256_broadcast_ss(&*a.add(i));
                        if FUSED {
                            row[0] = _mm256_fmadd_ps(x, b0, row[0]);
                            row[1] = _mm256_fmadd_ps(x, b1, row[1]);
                        } else {
                            row[0] = _mm256_add_ps(row[0], _mm256_mul_ps(x, b0));
                            row[1] = _mm256_add_ps(row[1], _mm256_mul_ps(x, b1));
                        }
                    }
                }};
            }
            let (mut a, mut b, mut scales) = (a, b, scales);
            let mut next = NextLines::new(next, next_len, b);
            let mut groups = kc / group;
            while groups > 0 {
                let mut acc = [[_mm256_setzero_ps(); 2]; MR];
                let mut k = group;
                while k >= UNROLL {
                    _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add(A_AHEAD).cast());
                    _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add(A_AHEAD + LINE).cast());
                    _mm_prefetch::<_MM_HINT_T0>(next.advance().cast());
                    for u in 0..UNROLL {
                        step!(acc, a.add(u * MR), b.add(u * NR));
                    }
                    a = a.add(UNROLL * MR);
                    b = b.add(UNROLL * NR);
                    k -= UNROLL;
                }
                while k > 0 {
                    step!(acc, a, b);
                    a = a.add(MR);
                    b = b.add(NR);
                    k -= 1;
                }
                let s0 = _mm256_loadu_ps(scales);
                let s1 = _mm256_loadu_ps(scales.add(8));
                for (i, row) in acc.iter().enumerate() {
                    let (c0, c1) = (c.add(i * NR), c.add(i * NR + 8));
                    _mm256_storeu_ps(c0, _mm256_add_ps(_mm256_loadu_ps(c0), _mm256_mul_ps(s0, row[0])));
                    _mm256_storeu_ps(c1, _mm256_add_ps(_mm256_loadu_ps(c1), _mm256_mul_ps(s1, row[1])));
                }
                scales = scales.add(NR);
                groups -= 1;
            }
        }
    }
}

mod bf16 {
    use crate::gemm::tile::{MR, NR, NextLines};
    use crate::simd::avx2::round_bf16_not_nan as round;
    use std::arch::x86_64::*;

    /// Rows per half of the tile.
    const HALF: usize = MR / 2;

    /// [`TileFn`](crate::gemm::tile::TileFn)'s contract for the 6 × 16 tile in bf16
    /// arithmetic: rows `0..3`, then rows `3..6`, each over all `kc` steps (the panel of `b`
    /// is read twice, from L1).
    ///
    /// # Safety
    /// AVX2 must be available; `a` must be valid for `kc · MR` reads, `b` for `kc · NR` reads,
    /// `c` for `MR · NR` reads and writes. `next` (`next_len` floats) is only prefetched, never
    /// read: any address is sound.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile_6x16(
        kc: usize,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        accumulate: bool,
        next: *const f32,
        next_len: usize,
    ) {
        const _: () = assert!(MR == 6 && NR == 16);
        // SAFETY: the halves read and write within the extents the caller guarantees (rows
        // `3..6` start at `a + 3` and `c + 3 · NR`); prefetches never fault.
        unsafe {
            half(kc, a, b, c, accumulate, (next, next_len));
            half(kc, a.add(HALF), b, c.add(HALF * NR), accumulate, (b, 0));
        }
    }

    /// Rows `0..3` of the tile at `a` (panel rows `MR` apart) and `c`, over `kc` steps;
    /// prefetches `next` (one line per two steps).
    ///
    /// # Safety
    /// As [`tile_6x16`]: `a` valid for reading `kc · MR` floats (3 of every `MR`), `b` for
    /// `kc · NR`, `c` for `3 · NR` reads and writes.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn half(kc: usize, a: *const f32, b: *const f32, c: *mut f32, accumulate: bool, next: (*const f32, usize)) {
        // SAFETY: every read and write below stays within the extents above; prefetches are
        // hints computed with `wrapping_add`.
        unsafe {
            let mut acc = [[_mm256_setzero_ps(); 2]; HALF];
            if accumulate {
                for (i, row) in acc.iter_mut().enumerate() {
                    row[0] = _mm256_loadu_ps(c.add(i * NR));
                    row[1] = _mm256_loadu_ps(c.add(i * NR + 8));
                }
            }
            let mut next = NextLines::new(next.0, next.1, b);
            let (mut a, mut b) = (a, b);
            let mut k = kc;
            while k > 0 {
                if k.is_multiple_of(2) {
                    _mm_prefetch::<_MM_HINT_T0>(next.advance().cast());
                }
                let b0 = _mm256_loadu_ps(b);
                let b1 = _mm256_loadu_ps(b.add(8));
                for (i, row) in acc.iter_mut().enumerate() {
                    let x = _mm256_broadcast_ss(&*a.add(i));
                    row[0] = round(_mm256_add_ps(row[0], round(_mm256_mul_ps(x, b0))));
                    row[1] = round(_mm256_add_ps(row[1], round(_mm256_mul_ps(x, b1))));
                }
                a = a.add(MR);
                b = b.add(NR);
                k -= 1;
            }
            for (i, row) in acc.iter().enumerate() {
                _mm256_storeu_ps(c.add(i * NR), row[0]);
                _mm256_storeu_ps(c.add(i * NR + 8), row[1]);
            }
        }
    }
}
