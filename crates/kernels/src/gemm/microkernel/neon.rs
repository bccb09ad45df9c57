//! The NEON micro-kernels (aarch64): the 6 × 16 tile in 24 `float32x4_t` accumulators (of the
//! 32 vector registers; a k step's four vectors of `b` and two of `a` take six more). Per k
//! step four loads of `b`, one load of `a`'s first four values and one of its last two, and for
//! each accumulator one `vfmaq_laneq_f32` (or `vfmaq_lane_f32`): `acc + b_j · a_i` with one
//! rounding, the step of [`Fused`](crate::gemm::arithmetic::Fused). That is the stock aarch64 wheel's
//! rule, [`TargetMultiplyAdd`](crate::gemm::arithmetic::TargetMultiplyAdd) there, so one kernel
//! serves [`Steps::Mlx`](super::Steps::Mlx) and
//! [`Steps::Fused`](super::Steps::Fused), and each accumulator computes what the
//! portable tile's `f32::mul_add` chain computes, in the same k order: the same bits.
//!
//! The grouped kernel runs the same steps a group at a time, from zeros, and after each group
//! adds the scaled sums into the tile in memory with one fused step, `fma(s, P, c)`
//! (`vfmaq_f32`), as the portable kernel's `Fused::mul_add(s, P, c)`.
//!
//! Neither kernel reads or prefetches `next`.

use crate::cpu::Neon;
use crate::gemm::tile::{GroupedTileFn, TileFn};

/// The NEON tile function (the fused step) for the CPU the token vouches for.
pub(crate) fn tile(_: Neon) -> TileFn {
    arm::tile_6x16
}

/// The NEON grouped tile function (fused steps) for the CPU the token vouches for.
pub(crate) fn grouped_tile(_: Neon) -> GroupedTileFn {
    arm::grouped_6x16
}

/// The NEON tile function of bf16 arithmetic, for the CPU the token vouches for.
pub(crate) fn bf16_tile(_: Neon) -> TileFn {
    bf16::tile_6x16
}

mod arm {
    use crate::gemm::tile::{MR, NR};
    use std::arch::aarch64::*;

    /// Vectors per row of the tile.
    const Q: usize = NR / 4;

    /// `R` rows of a tile at `c` (`NR` floats each, consecutive) as accumulators: loaded when
    /// `accumulate`, zeros otherwise.
    ///
    /// # Safety
    /// NEON must be available; with `accumulate`, `c` must be valid for `R · NR` reads.
    #[inline]
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn load_rows<const R: usize>(c: *const f32, accumulate: bool) -> [[float32x4_t; Q]; R] {
        let mut acc = [[vdupq_n_f32(0.0); Q]; R];
        if accumulate {
            for (i, row) in acc.iter_mut().enumerate() {
                for (q, v) in row.iter_mut().enumerate() {
                    // SAFETY: `i · NR + 4q + 4 ≤ R · NR`, within what the caller guarantees.
                    *v = unsafe { vld1q_f32(c.add(i * NR + 4 * q)) };
                }
            }
        }
        acc
    }

    /// Stores the accumulators `acc` as `R` rows of a tile at `c` (`NR` floats each,
    /// consecutive).
    ///
    /// # Safety
    /// NEON must be available; `c` must be valid for `R · NR` writes.
    #[inline]
    #[target_feature(enable = "neon")]
    pub(super) unsafe fn store_rows<const R: usize>(c: *mut f32, acc: &[[float32x4_t; Q]; R]) {
        for (i, row) in acc.iter().enumerate() {
            for (q, v) in row.iter().enumerate() {
                // SAFETY: `i · NR + 4q + 4 ≤ R · NR`, within what the caller guarantees.
                unsafe { vst1q_f32(c.add(i * NR + 4 * q), *v) };
            }
        }
    }

    /// One k step on the accumulators `$acc` (`[[float32x4_t; Q]; MR]`): row `i` gets
    /// `fma(a[i], b[·], acc)`, `$a` and `$b` pointing at the step's `MR` and `NR` values.
    macro_rules! step {
        ($acc:expr, $a:expr, $b:expr) => {{
            let (a, b): (*const f32, *const f32) = ($a, $b);
            let bv = [vld1q_f32(b), vld1q_f32(b.add(4)), vld1q_f32(b.add(8)), vld1q_f32(b.add(12))];
            // a[0..4] and a[4..6]: exactly the step's six values.
            let low = vld1q_f32(a);
            let high = vld1_f32(a.add(4));
            let acc = &mut $acc;
            for q in 0..Q {
                acc[0][q] = vfmaq_laneq_f32::<0>(acc[0][q], bv[q], low);
                acc[1][q] = vfmaq_laneq_f32::<1>(acc[1][q], bv[q], low);
                acc[2][q] = vfmaq_laneq_f32::<2>(acc[2][q], bv[q], low);
                acc[3][q] = vfmaq_laneq_f32::<3>(acc[3][q], bv[q], low);
                acc[4][q] = vfmaq_lane_f32::<0>(acc[4][q], bv[q], high);
                acc[5][q] = vfmaq_lane_f32::<1>(acc[5][q], bv[q], high);
            }
        }};
    }

    /// [`TileFn`](crate::gemm::tile::TileFn)'s contract for the 6 × 16 tile, each step one
    /// fused multiply-add per accumulator.
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
        // SAFETY: every pointer offset below stays within the extents the caller guarantees
        // (`a` below `kc · MR`, `b` below `kc · NR`, `c` below `MR · NR`).
        unsafe {
            let mut acc = load_rows::<MR>(c, accumulate);
            let (mut a, mut b) = (a, b);
            let mut k = kc;
            while k >= 2 {
                step!(acc, a, b);
                step!(acc, a.add(MR), b.add(NR));
                a = a.add(2 * MR);
                b = b.add(2 * NR);
                k -= 2;
            }
            if k > 0 {
                step!(acc, a, b);
            }
            store_rows(c, &acc);
        }
    }

    /// [`GroupedTileFn`](crate::gemm::tile::GroupedTileFn)'s contract for the 6 × 16 tile,
    /// every step fused.
    ///
    /// # Safety
    /// NEON must be available; `kc` a multiple of `group` (`group > 0`); `a` valid for
    /// `kc · MR` reads, `b` for `kc · NR`, `scales` for `kc / group · NR`, `c` for `MR · NR`
    /// reads and writes. `next` is not used.
    #[target_feature(enable = "neon")]
    #[allow(clippy::too_many_arguments, reason = "the GroupedTileFn signature")]
    pub(super) unsafe fn grouped_6x16(
        kc: usize,
        group: usize,
        a: *const f32,
        b: *const f32,
        scales: *const f32,
        c: *mut f32,
        _next: *const f32,
        _next_len: usize,
    ) {
        const _: () = assert!(MR == 6 && NR == 16);
        // SAFETY: as in `tile_6x16`; the groups read `scales` below `kc / group · NR`.
        unsafe {
            let (mut a, mut b, mut scales) = (a, b, scales);
            let mut groups = kc / group;
            while groups > 0 {
                let mut acc = [[vdupq_n_f32(0.0); Q]; MR];
                let mut k = group;
                while k > 0 {
                    step!(acc, a, b);
                    a = a.add(MR);
                    b = b.add(NR);
                    k -= 1;
                }
                let s: [float32x4_t; Q] = std::array::from_fn(|q| vld1q_f32(scales.add(4 * q)));
                for (i, row) in acc.iter().enumerate() {
                    for (q, p) in row.iter().enumerate() {
                        let at = c.add(i * NR + 4 * q);
                        vst1q_f32(at, vfmaq_f32(vld1q_f32(at), s[q], *p));
                    }
                }
                scales = scales.add(NR);
                groups -= 1;
            }
        }
    }
}

mod bf16 {
    use super::arm::{load_rows, store_rows};
    use crate::gemm::tile::{MR, NR};
    use crate::simd::neon::round_bf16_not_nan as round;
    use std::arch::aarch64::*;

    /// Rows per half of the tile.
    const HALF: usize = MR / 2;
    /// Vectors per row of the tile.
    const Q: usize = NR / 4;

    /// [`TileFn`](crate::gemm::tile::TileFn)'s contract for the 6 × 16 tile in bf16
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

#[cfg(test)]
mod tests {
    use super::super::portable::{tile_grouped, tile_slices};
    use super::super::{MicroKernel, Steps};
    use crate::gemm::arithmetic::{Fused, TargetMultiplyAdd};
    use crate::gemm::tile::{MR, NR, TILE};
    use crate::testing::lcg_values;

    /// The NEON kernels are the fused rule's, which must be the target's.
    #[test]
    fn the_target_rule_is_the_fused_one() {
        assert_eq!(std::any::TypeId::of::<TargetMultiplyAdd>(), std::any::TypeId::of::<Fused>());
    }

    /// Panels whose fused and separate sums differ, with NaN, infinities, signed zeros and
    /// subnormal products on a few lanes.
    fn panels(kc: usize) -> (Vec<f32>, Vec<f32>) {
        let mut a = lcg_values::<f32>(kc * MR, 11, 7.0);
        let mut b = lcg_values::<f32>(kc * NR, 12, 3.0);
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e-30, 3e38, 1e-20];
        for (i, &x) in specials.iter().enumerate() {
            if let Some(v) = a.get_mut(i * 13 + 2) {
                *v = x;
            }
            if let Some(v) = b.get_mut(i * 29 + 5) {
                *v = x;
            }
        }
        (a, b)
    }

    fn same(x: &[f32], y: &[f32]) -> bool {
        x.iter().zip(y).all(|(x, y)| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits())
    }

    /// Every step count (the unrolled pairs and the odd last step) against the portable tile.
    #[test]
    fn the_tile_is_the_portable_fused_tile() {
        if !MicroKernel::available().contains(&MicroKernel::Neon) {
            return;
        }
        let neon = MicroKernel::Neon.resolve();
        for kc in [0usize, 1, 2, 3, 4, 5, 17, 64, 257] {
            let (a, b) = panels(kc);
            let start: [f32; TILE] = std::array::from_fn(|i| (i as f32 - 40.0) * 0.37);
            for accumulate in [false, true] {
                let mut want = start;
                tile_slices::<Fused>(&a, &b, &mut want, accumulate);
                for steps in [Steps::Mlx, Steps::Fused] {
                    let mut got = start;
                    neon.run_steps(steps, kc, (&a, &b), &mut got, accumulate, &[]);
                    assert!(same(&got, &want), "kc {kc} accumulate {accumulate} {steps:?}");
                }
            }
        }
    }

    #[test]
    fn the_grouped_tile_is_the_portable_fused_one() {
        if !MicroKernel::available().contains(&MicroKernel::Neon) {
            return;
        }
        let neon = MicroKernel::Neon.resolve();
        for (group, groups) in [(1usize, 3usize), (4, 2), (32, 3), (64, 1)] {
            let kc = group * groups;
            let (a, b) = panels(kc);
            let mut scales = lcg_values::<f32>(groups * NR, 13, 2.0);
            scales[3] = -0.0;
            let start: [f32; TILE] = std::array::from_fn(|i| (i as f32 - 40.0) * 0.37);
            let mut want = start;
            // SAFETY: the panels hold `kc · MR` and `kc · NR` values, `scales` `groups · NR`,
            // and `want` is a whole tile; `kc` is a multiple of `group`.
            unsafe {
                tile_grouped::<Fused>(
                    kc,
                    group,
                    a.as_ptr(),
                    b.as_ptr(),
                    scales.as_ptr(),
                    want.as_mut_ptr(),
                    [].as_ptr(),
                    0,
                );
            }
            for fused in [false, true] {
                let mut got = start;
                neon.run_grouped(fused, (kc, group), (&a, &b), &scales, &mut got, &[]);
                assert!(same(&got, &want), "group {group} × {groups}, fused {fused}");
            }
        }
    }
}
