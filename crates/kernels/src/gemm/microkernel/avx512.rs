//! The AVX-512 micro-kernels: 6 × 16 register tiles, two that share their panel of `b` (pairs)
//! or one alone, each row of a tile one `__m512` accumulator. Per k step one load of `b`, six
//! broadcasts of `a` per tile and for each accumulator a `_mm512_mul_ps` then a
//! `_mm512_add_ps` (the product rounded before the add, as MLX's CPU matmul rounds it), or,
//! where every product is exact, one `_mm512_fmadd_ps`. Each lane computes what a lane of the
//! AVX2 kernel computes, in the same order, so the bits are the AVX2 kernel's.
//!
//! The k loop runs four steps per iteration and prefetches into L1 the panels of `a` a few
//! iterations ahead and, one cache line per iteration, the memory the caller reads next.

use crate::cpu::Avx512;
use crate::gemm::tile::{PairTileFn, TileFn};

/// The AVX-512 pair-tile functions, `(separate, fused)`, for the CPU the token vouches for.
pub(crate) fn pair_tiles(_: Avx512) -> (PairTileFn, PairTileFn) {
    (x86::pair_6x16::<false>, x86::pair_6x16::<true>)
}

/// The AVX-512 single-tile functions of float32 arithmetic, `(separate, fused)`, for the CPU
/// the token vouches for.
pub(crate) fn tiles(_: Avx512) -> (TileFn, TileFn) {
    (x86::tile_6x16::<false>, x86::tile_6x16::<true>)
}

/// The AVX-512 tile function of bf16 arithmetic, for the CPU the token vouches for.
pub(crate) fn bf16_tile(_: Avx512) -> TileFn {
    bf16::tile_6x16
}

mod x86 {
    use crate::gemm::tile::{LINE, MR, NR, NextLines};
    use std::arch::x86_64::*;

    /// k steps per iteration of the main loop.
    const UNROLL: usize = 4;
    /// How far ahead of the current k step `a` is prefetched, in floats (32 steps).
    const A_AHEAD: usize = 32 * MR;

    /// [`PairTileFn`](crate::gemm::tile::PairTileFn)'s contract for two 6 × 16 tiles; `FUSED`
    /// uses `fma(a, b, acc)` for `acc + round(a · b)` (the same bits only where every product
    /// is exact, which the caller checks).
    ///
    /// # Safety
    /// AVX-512F must be available; `a[0]` and `a[1]` must be valid for `kc · MR` reads, `b` for
    /// `kc · NR` reads, `c[0]` and `c[1]` for `MR · NR` reads and writes each (two distinct
    /// tiles). `next` (`next_len` floats) is only prefetched, never read: any address is sound.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn pair_6x16<const FUSED: bool>(
        kc: usize,
        a: [*const f32; 2],
        b: *const f32,
        c: [*mut f32; 2],
        accumulate: bool,
        next: *const f32,
        next_len: usize,
    ) {
        // SAFETY: the caller's guarantees are `tiles_6x16`'s for two tiles.
        unsafe { tiles_6x16::<FUSED, 2>(kc, a, b, c, accumulate, next, next_len) }
    }

    /// [`TileFn`](crate::gemm::tile::TileFn)'s contract for one 6 × 16 tile; `FUSED` as in
    /// [`pair_6x16`].
    ///
    /// # Safety
    /// AVX-512F must be available; `a` must be valid for `kc · MR` reads, `b` for `kc · NR`
    /// reads, `c` for `MR · NR` reads and writes. `next` (`next_len` floats) is only
    /// prefetched, never read: any address is sound.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile_6x16<const FUSED: bool>(
        kc: usize,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        accumulate: bool,
        next: *const f32,
        next_len: usize,
    ) {
        // SAFETY: the caller's guarantees are `tiles_6x16`'s for one tile.
        unsafe { tiles_6x16::<FUSED, 1>(kc, [a], b, [c], accumulate, next, next_len) }
    }

    /// `P` tiles of 6 × 16 that share the panel `b`: tile `t` at `c[t]` from the panel `a[t]`.
    ///
    /// # Safety
    /// AVX-512F must be available; each `a[t]` must be valid for `kc · MR` reads, `b` for
    /// `kc · NR` reads, each `c[t]` for `MR · NR` reads and writes (distinct tiles). `next`
    /// (`next_len` floats) is only prefetched, never read: any address is sound.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn tiles_6x16<const FUSED: bool, const P: usize>(
        kc: usize,
        a: [*const f32; P],
        b: *const f32,
        c: [*mut f32; P],
        accumulate: bool,
        next: *const f32,
        next_len: usize,
    ) {
        const _: () = assert!(MR == 6 && NR == 16);
        // SAFETY: every pointer offset below that is read stays within the extents the caller
        // guarantees (`a[t]` below `kc · MR`, `b` below `kc · NR`, `c[t]` below `MR · NR`); the
        // prefetches (`a` ahead, `next`) are hints that never fault, computed with
        // `wrapping_add` so that they need not lie inside any allocation.
        unsafe {
            let mut acc = [[_mm512_setzero_ps(); MR]; P];
            if accumulate {
                for (tile, c) in acc.iter_mut().zip(c) {
                    for (i, row) in tile.iter_mut().enumerate() {
                        *row = _mm512_loadu_ps(c.add(i * NR));
                    }
                }
            }
            // One k step: `acc[t][i] += a[t][i] · b[·]`, `a` and `b` pointing at the step's values.
            macro_rules! step {
                ($a:expr, $b:expr) => {{
                    let (a, b): ([*const f32; P], *const f32) = ($a, $b);
                    let bv = _mm512_loadu_ps(b);
                    for (tile, a) in acc.iter_mut().zip(a) {
                        for (i, row) in tile.iter_mut().enumerate() {
                            let x = _mm512_set1_ps(*a.add(i));
                            *row = if FUSED {
                                _mm512_fmadd_ps(x, bv, *row)
                            } else {
                                _mm512_add_ps(*row, _mm512_mul_ps(x, bv))
                            };
                        }
                    }
                }};
            }
            let (mut a, mut b) = (a, b);
            let mut next = NextLines::new(next, next_len, b);
            let mut k = kc;
            while k >= UNROLL {
                // Four steps read 24 floats of each panel of `a`: one or two lines each.
                for a in a {
                    _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add(A_AHEAD).cast());
                    _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add(A_AHEAD + LINE).cast());
                }
                _mm_prefetch::<_MM_HINT_T0>(next.advance().cast());
                for u in 0..UNROLL {
                    step!(a.map(|a| a.add(u * MR)), b.add(u * NR));
                }
                a = a.map(|a| a.add(UNROLL * MR));
                b = b.add(UNROLL * NR);
                k -= UNROLL;
            }
            while k > 0 {
                step!(a, b);
                a = a.map(|a| a.add(MR));
                b = b.add(NR);
                k -= 1;
            }
            for (tile, c) in acc.iter().zip(c) {
                for (i, row) in tile.iter().enumerate() {
                    _mm512_storeu_ps(c.add(i * NR), *row);
                }
            }
        }
    }
}

mod bf16 {
    use crate::gemm::tile::{MR, NR, NextLines};
    use crate::simd::avx512::round_bf16_not_nan as round;
    use std::arch::x86_64::*;

    /// [`TileFn`](crate::gemm::tile::TileFn)'s contract for the 6 × 16 tile in bf16
    /// arithmetic, one `__m512` accumulator per row.
    ///
    /// # Safety
    /// AVX-512F must be available; `a` must be valid for `kc · MR` reads, `b` for `kc · NR`
    /// reads, `c` for `MR · NR` reads and writes. `next` (`next_len` floats) is only
    /// prefetched, never read: any address is sound.
    #[target_feature(enable = "avx512f")]
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
        // SAFETY: every read and write below stays within the extents the caller guarantees
        // (`a` below `kc · MR`, `b` below `kc · NR`, `c` below `MR · NR`); the prefetches are
        // hints that never fault, computed with `wrapping_add`.
        unsafe {
            let mut acc = [_mm512_setzero_ps(); MR];
            if accumulate {
                for (i, row) in acc.iter_mut().enumerate() {
                    *row = _mm512_loadu_ps(c.add(i * NR));
                }
            }
            let mut next = NextLines::new(next, next_len, b);
            let (mut a, mut b) = (a, b);
            let mut k = kc;
            while k > 0 {
                if k.is_multiple_of(2) {
                    _mm_prefetch::<_MM_HINT_T0>(next.advance().cast());
                }
                let bv = _mm512_loadu_ps(b);
                for (i, row) in acc.iter_mut().enumerate() {
                    let x = _mm512_set1_ps(*a.add(i));
                    *row = round(_mm512_add_ps(*row, round(_mm512_mul_ps(x, bv))));
                }
                a = a.add(MR);
                b = b.add(NR);
                k -= 1;
            }
            for (i, row) in acc.iter().enumerate() {
                _mm512_storeu_ps(c.add(i * NR), *row);
            }
        }
    }
}
