//! The micro-kernels of [`Arithmetic::Bf16`](super::arithmetic::Arithmetic::Bf16): for each k
//! in order, every accumulator of the `MR × NR` tile gets `acc = bf16(acc + bf16(a_i · b_j))`,
//! the product and the sum each computed in `f32` and rounded to bf16 ([`round_bf16`]), as
//! MLX's scalar loops over `bfloat16_t` compute `sum += x * w`.
//!
//! The operands and the tile hold bf16 values (NaNs included: their low 16 bits are zero), so
//! every rounding is the integer rule of [`round_bf16`] with no NaN test; the tile's NaNs are
//! made `0x7FC0` when it is stored. Each k step costs two roundings per accumulator besides
//! the multiply and the add: the AVX2 kernel does five integer operations per rounding
//! (shift, and, two adds, and), twelve vector operations per eight multiply-adds, and runs the
//! tile as two halves of three rows so that the six accumulators, the two vectors of `b` and
//! the rounding's constants and temporaries fit in the sixteen registers. The AVX-512 kernel
//! holds each row of the tile in one 16-lane accumulator and rounds in four operations (bit 16
//! tested into a mask register, the add of `0x7FFF`, the add of 1 in the masked lanes, the
//! and): ten vector operations per sixteen multiply-adds, the same integer rule lane by lane,
//! so its bits are the other kernels'. The NEON kernel (aarch64) rounds with the AVX2 kernel's
//! five integer operations on 4 lanes and runs the tile as the same two halves of three rows
//! (twelve accumulators of the 32 registers); its multiply and add are separate instructions
//! (`fmul`, `fadd`), never one `fmla`, as every rounding to bf16 between them requires.

use super::arithmetic::round_bf16;
use super::tile::{MR, NR, TILE};

/// The portable kernel ([`TileFn`](super::tile::TileFn)'s contract, no prefetch), in bf16
/// arithmetic.
///
/// # Safety
/// `a` must be valid for `kc · MR` reads, `b` for `kc · NR` reads, `c` for `MR · NR` reads and
/// writes, the three not overlapping `c`.
pub(crate) unsafe fn tile_portable(
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

/// The AVX2 kernel, for the CPU the token vouches for.
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx2(_: crate::cpu::Avx2) -> super::tile::TileFn {
    x86::tile_6x16
}

/// The AVX-512 kernel, for the CPU the token vouches for.
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx512(_: crate::cpu::Avx512) -> super::tile::TileFn {
    x86_avx512::tile_6x16
}

/// The NEON kernel, for the CPU the token vouches for.
#[cfg(target_arch = "aarch64")]
pub(crate) fn neon(_: crate::cpu::Neon) -> super::tile::TileFn {
    arm::tile_6x16
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::super::microkernel_neon::{load_rows, store_rows};
    use super::{MR, NR};
    use crate::lanes_neon::round4_bf16_not_nan as round;
    use std::arch::aarch64::*;

    /// Rows per half of the tile.
    const HALF: usize = MR / 2;
    /// Vectors per row of the tile.
    const Q: usize = NR / 4;

    /// [`TileFn`](super::super::tile::TileFn)'s contract for the 6 × 16 tile in bf16
    /// arithmetic: rows `0..3`, then rows `3..6`, each over all `kc` steps (the panel of `b`
    /// is read twice, from L1).
    ///
    /// # Safety
    /// NEON must be available; `a` must be valid for `kc · MR` reads, `b` for `kc · NR` reads,
    /// `c` for `MR · NR` reads and writes. `next` is not used.
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn tile_6x16(
        kc: usize,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        accumulate: bool,
        _next: *const f32,
        _next_len: usize,
    ) {
        const _: () = assert!(MR == 6 && NR == 16);
        // SAFETY: the halves read and write within the extents the caller guarantees (rows
        // `3..6` start at `a + 3` and `c + 3 · NR`).
        unsafe {
            half(kc, a, b, c, accumulate);
            half(kc, a.add(HALF), b, c.add(HALF * NR), accumulate);
        }
    }

    /// Rows `0..3` of the tile at `a` (panel rows `MR` apart) and `c`, over `kc` steps.
    ///
    /// # Safety
    /// As [`tile_6x16`]: `a` valid for reading `kc · MR` floats (3 of every `MR`), `b` for
    /// `kc · NR`, `c` for `3 · NR` reads and writes.
    #[inline]
    #[target_feature(enable = "neon")]
    unsafe fn half(kc: usize, a: *const f32, b: *const f32, c: *mut f32, accumulate: bool) {
        // SAFETY: every read and write below stays within the extents above.
        unsafe {
            let mut acc = load_rows::<HALF>(c, accumulate);
            let (mut a, mut b) = (a, b);
            let mut k = kc;
            while k > 0 {
                let bv: [float32x4_t; Q] = std::array::from_fn(|q| vld1q_f32(b.add(4 * q)));
                for (i, row) in acc.iter_mut().enumerate() {
                    let x = vld1q_dup_f32(a.add(i));
                    for (v, &y) in row.iter_mut().zip(&bv) {
                        *v = round(vaddq_f32(*v, round(vmulq_f32(x, y))));
                    }
                }
                a = a.add(MR);
                b = b.add(NR);
                k -= 1;
            }
            store_rows(c, &acc);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86_avx512 {
    use super::super::tile::NextLines;
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// [`TileFn`](super::super::tile::TileFn)'s contract for the 6 × 16 tile in bf16
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

    /// `x` rounded to bf16 (`round_bf16` on each lane): `u + 0x7FFF`, plus 1 in the lanes whose
    /// bit 16 is set, with the low 16 bits cleared.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn round(x: __m512) -> __m512 {
        let u = _mm512_castps_si512(x);
        let odd = _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x1_0000));
        let half = _mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF));
        let rounded = _mm512_mask_add_epi32(half, odd, half, _mm512_set1_epi32(1));
        _mm512_castsi512_ps(_mm512_and_si512(rounded, _mm512_set1_epi32(0xFFFF_0000_u32 as i32)))
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use super::super::tile::NextLines;
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// Rows per half of the tile.
    const HALF: usize = MR / 2;

    /// [`TileFn`](super::super::tile::TileFn)'s contract for the 6 × 16 tile in bf16
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

    /// `x` rounded to bf16 (`round_bf16` on each lane).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn round(x: __m256) -> __m256 {
        let u = _mm256_castps_si256(x);
        let odd = _mm256_and_si256(_mm256_srli_epi32::<16>(u), _mm256_set1_epi32(1));
        let rounded = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), odd);
        _mm256_castsi256_ps(_mm256_and_si256(rounded, _mm256_set1_epi32(0xFFFF_0000_u32 as i32)))
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

#[cfg(test)]
mod tests {
    use super::super::microkernel::{MicroKernel, Steps};
    use super::*;
    use crate::bf16_from_f32;
    use crate::testing::lcg_values;
    use half::bf16;

    /// The tile as MLX's bf16 loop computes it: `sum = bf16(sum + bf16(x · w))`, from `start`.
    fn expected(kc: usize, a: &[f32], b: &[f32], start: &[f32; TILE]) -> [f32; TILE] {
        let mut c = *start;
        for k in 0..kc {
            for i in 0..MR {
                for j in 0..NR {
                    let product = bf16_from_f32(a[k * MR + i] * b[k * NR + j]).to_f32();
                    c[i * NR + j] = bf16_from_f32(c[i * NR + j] + product).to_f32();
                }
            }
        }
        c
    }

    #[test]
    fn every_kernel_rounds_each_product_and_sum_to_bf16() {
        for kc in [0usize, 1, 2, 3, 7, 64] {
            let mut a: Vec<f32> = lcg_values::<bf16>(kc * MR, 1, 300.0).iter().map(|x| x.to_f32()).collect();
            let mut b: Vec<f32> = lcg_values::<bf16>(kc * NR, 2, 3.0).iter().map(|x| x.to_f32()).collect();
            // NaN, infinities, a subnormal product and an overflow on a few lanes.
            let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-30, 3e38, -0.0];
            for (i, &x) in specials.iter().enumerate() {
                if let Some(v) = a.get_mut(i * 7) {
                    *v = bf16_from_f32(x).to_f32();
                }
                if let Some(v) = b.get_mut(i * 11 + 3) {
                    *v = bf16_from_f32(x).to_f32();
                }
            }
            let start: [f32; TILE] = std::array::from_fn(|i| bf16_from_f32(i as f32 * 0.37 - 9.0).to_f32());
            let want = expected(kc, &a, &b, &start);
            let zeros = expected(kc, &a, &b, &[0.0; TILE]);
            for kernel in MicroKernel::available() {
                let tiles = kernel.resolve();
                for (accumulate, want) in [(true, &want), (false, &zeros)] {
                    let mut c = start;
                    tiles.run_steps(Steps::Bf16, kc, (&a, &b), &mut c, accumulate, &[]);
                    for (i, (&x, &y)) in c.iter().zip(want).enumerate() {
                        let same = bf16_from_f32(x).to_bits() == bf16_from_f32(y).to_bits();
                        assert!(same, "{kernel:?} kc {kc} [{i}]: {x:?}, want {y:?}");
                        assert!(x.is_nan() || x.to_bits() == y.to_bits(), "{kernel:?} kc {kc} [{i}]: {x:?} vs {y:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_accumulator_stops_growing_where_bf16_does() {
        // 256 + 1 is a tie between 256 and 258 in bf16 and rounds to the even 256: a sum of
        // ones stays there, where an f32 accumulator would count on.
        let kc = 300;
        let (a, b) = (vec![1.0f32; kc * MR], vec![1.0f32; kc * NR]);
        for kernel in MicroKernel::available() {
            let mut c = [0.0; TILE];
            kernel.resolve().run_steps(Steps::Bf16, kc, (&a, &b), &mut c, false, &[]);
            assert!(c.iter().all(|&x| x == 256.0), "{kernel:?}: {:?}", &c[..4]);
        }
    }
}
