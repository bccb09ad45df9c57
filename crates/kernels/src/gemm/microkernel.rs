//! The choice of micro-kernel that computes the register tile ([`tile`](super::tile)), and the
//! micro-kernels themselves, one module per instruction set: `portable`, `avx2`, `avx512`,
//! `neon` (files in `microkernel/`). They stay apart on purpose: each is tiled for its
//! registers (broadcasts, lane-indexed fused steps, paired tiles); the vector code around them
//! (packing, stores, the softmax) is written once over [`simd`](crate::simd)'s lanes.
//!
//! A micro-kernel updates one `MR × NR` tile of `f32` accumulators (row-major in a slice) with
//! `kc` rank-1 updates: for each k in order, every accumulator gets `acc = acc + a_i · b_j` under
//! the target's [`MultiplyAdd`](super::arithmetic::MultiplyAdd) rule (the product rounded first
//! on x86-64, where the AVX kernels live; fused on aarch64, where the NEON and portable kernels
//! run). `a` is a packed micro-panel (`kc × MR`, k-major), `b` one of `kc × NR`. All kernels of
//! a target give the same bits (on x86-64 the FMA variant only where every product is exact,
//! see [`magnitudes`](super::magnitudes)). Where two tiles share their panel of `b`,
//! [`TileKernel::run_pair`] computes both at once (the AVX-512 kernel's twelve 16-lane
//! accumulators), with the bits of two single tiles.
//!
//! In [`Arithmetic::Bf16`](super::arithmetic::Arithmetic::Bf16) each k step gives every
//! accumulator `acc = bf16(acc + bf16(a_i · b_j))`, the product and the sum each computed in
//! `f32` and rounded to bf16 ([`round_bf16`](super::arithmetic::round_bf16)), as MLX's scalar
//! loops over `bfloat16_t` compute `sum += x * w`. The operands and the tile hold bf16 values
//! (NaNs included: their low 16 bits are zero), so every rounding is the integer rule with no
//! NaN test (the lanes' `round_bf16_not_nan`); the tile's NaNs are made `0x7FC0` when it is
//! stored. Each k step costs two roundings per accumulator besides the multiply and the add:
//! the AVX2 kernel does five integer operations per rounding (shift, and, two adds, and),
//! twelve vector operations per eight multiply-adds, and runs the tile as two halves of three
//! rows so that the six accumulators, the two vectors of `b` and the rounding's constants and
//! temporaries fit in the sixteen registers. The AVX-512 kernel holds each row of the tile in
//! one 16-lane accumulator and rounds in four operations (bit 16 tested into a mask register,
//! the add of `0x7FFF`, the add of 1 in the masked lanes, the and): ten vector operations per
//! sixteen multiply-adds, the same integer rule lane by lane, so its bits are the other
//! kernels'. The NEON kernel (aarch64) rounds with the AVX2 kernel's five integer operations on
//! 4 lanes and runs the tile as the same two halves of three rows (twelve accumulators of the
//! 32 registers); its multiply and add are separate instructions (`fmul`, `fadd`), never one
//! `fmla`, as every rounding to bf16 between them requires.

use super::arithmetic::TargetMultiplyAdd;
use super::tile::{GroupedTileFn, MR, NR, PairTileFn, TILE, TileFn};
use crate::cpu::Isa;
use std::fmt;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "aarch64")]
mod neon;
pub(super) mod portable;

/// Which micro-kernel computes the tiles: the matrix products' choice, which a caller may name
/// (tests, benchmarks); it runs at an instruction set no higher than the one
/// [`cpu::isa`](crate::cpu::isa) resolved ([`MicroKernel::detect`] is that instruction set's
/// own kernel). See [`cpu`](crate::cpu) for how this relates to [`Isa`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MicroKernel {
    /// AVX-512F intrinsics for pairs of tiles and single tiles (`_mm512_mul_ps` then
    /// `_mm512_add_ps`, or FMA where exact) and for the tiles of bf16 arithmetic; the AVX2
    /// kernels for the grouped tiles of the quantized products.
    Avx512,
    /// AVX2 intrinsics (`_mm256_mul_ps` then `_mm256_add_ps`, or FMA where exact).
    Avx2,
    /// NEON intrinsics on aarch64 (`vfmaq_laneq_f32`: the fused step, aarch64's rule) for the
    /// tiles of float32 and of bf16 arithmetic.
    Neon,
    /// Plain Rust over fixed-size arrays (auto-vectorised at the baseline target).
    Portable,
}

impl MicroKernel {
    /// The micro-kernel of the instruction set [`cpu::isa`](crate::cpu::isa) resolved: AVX-512
    /// where the CPU has it (and the environment allows it), else AVX2; NEON on aarch64 (unless
    /// the environment asks for the portable loops); else portable.
    pub fn detect() -> MicroKernel {
        Self::of(crate::cpu::isa())
    }

    /// The micro-kernel the instruction set `isa` runs the matrix products' tiles with.
    pub fn of(isa: Isa) -> MicroKernel {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512(_) => MicroKernel::Avx512,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(_) => MicroKernel::Avx2,
            #[cfg(target_arch = "aarch64")]
            Isa::Neon(_) => MicroKernel::Neon,
            Isa::Portable => MicroKernel::Portable,
        }
    }

    /// Every kernel this process can run (the portable one always), as
    /// [`cpu::isa`](crate::cpu::isa) allows.
    pub fn available() -> Vec<MicroKernel> {
        match Self::detect() {
            MicroKernel::Avx512 => vec![MicroKernel::Portable, MicroKernel::Avx2, MicroKernel::Avx512],
            MicroKernel::Avx2 => vec![MicroKernel::Portable, MicroKernel::Avx2],
            MicroKernel::Neon => vec![MicroKernel::Portable, MicroKernel::Neon],
            MicroKernel::Portable => vec![MicroKernel::Portable],
        }
    }

    /// The instruction set this kernel runs on this CPU, the vector helpers around its tiles
    /// (packing, stores, softmax lanes) included: its own, capped at what
    /// [`cpu::isa`](crate::cpu::isa) resolved (portable for a kernel of another architecture).
    pub(crate) fn isa(self) -> Isa {
        match (self, crate::cpu::isa()) {
            #[cfg(target_arch = "x86_64")]
            (MicroKernel::Avx512, detected) => detected,
            #[cfg(target_arch = "x86_64")]
            (MicroKernel::Avx2, detected) => detected.at_most_avx2(),
            #[cfg(target_arch = "aarch64")]
            (MicroKernel::Neon, detected) => detected,
            _ => Isa::Portable,
        }
    }

    /// This kernel's tile functions for this CPU ([`MicroKernel::isa`]).
    #[cfg(test)]
    pub(crate) fn resolve(self) -> TileKernel {
        TileKernel::new(self.isa())
    }
}

/// How a tile function rounds each k step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Steps {
    /// `acc + a · b` in `f32` under
    /// [`TargetMultiplyAdd`] (the product rounded first
    /// on x86-64, one fused rounding on aarch64): MLX's rounding on this target, always right
    /// for [`Arithmetic::F32`](super::arithmetic::Arithmetic::F32).
    Mlx,
    /// `fma(a, b, acc)`: on x86-64, the same bits as [`Steps::Mlx`] only where every product is
    /// exact (see [`magnitudes`](super::magnitudes)); on aarch64 the same step as it (and the
    /// same tile function, [`TileKernel::fma_when_exact`] is false).
    Fused,
    /// `bf16(acc + bf16(a · b))`: [`Arithmetic::Bf16`](super::arithmetic::Arithmetic::Bf16), on
    /// operands and a tile of bf16 values.
    Bf16,
}

/// A micro-kernel's tile functions, one per [`Steps`], and the grouped ones of float32
/// arithmetic.
///
/// Only [`TileKernel::new`] makes one, of functions the instruction set it is given (which the
/// CPU runs: its tokens prove it) executes; calling them is sound whenever the pointers are
/// valid for those extents.
#[derive(Clone, Copy)]
pub(crate) struct TileKernel {
    separate: TileFn,
    fused: TileFn,
    bf16: TileFn,
    grouped_separate: GroupedTileFn,
    grouped_fused: GroupedTileFn,
    /// `(separate, fused)` pair-tile functions, where the kernel has them.
    pairs: Option<(PairTileFn, PairTileFn)>,
    /// Whether `fused` is other code than `separate` (see [`TileKernel::fma_when_exact`]).
    fma_when_exact: bool,
}

impl TileKernel {
    /// The tile functions of `isa`: for AVX-512, its own single, pair and bf16 tiles beside the
    /// AVX2 grouped tiles; for NEON, one fused tile for both float32 roundings (aarch64's rule
    /// is the fused step).
    pub(crate) fn new(isa: Isa) -> TileKernel {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512(avx512) => {
                let (separate, fused) = avx512::tiles(avx512);
                TileKernel {
                    separate,
                    fused,
                    pairs: Some(avx512::pair_tiles(avx512)),
                    bf16: avx512::bf16_tile(avx512),
                    ..TileKernel::new(Isa::Avx2(avx512.avx2()))
                }
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(avx2) => {
                let (separate, fused) = avx2::tiles(avx2);
                let (grouped_separate, grouped_fused) = avx2::grouped_tiles(avx2);
                let bf16 = avx2::bf16_tile(avx2);
                TileKernel { separate, fused, bf16, grouped_separate, grouped_fused, pairs: None, fma_when_exact: true }
            }
            #[cfg(target_arch = "aarch64")]
            Isa::Neon(neon) => {
                let (tile, grouped) = (neon::tile(neon), neon::grouped_tile(neon));
                TileKernel {
                    separate: tile,
                    fused: tile,
                    bf16: neon::bf16_tile(neon),
                    grouped_separate: grouped,
                    grouped_fused: grouped,
                    pairs: None,
                    fma_when_exact: false,
                }
            }
            Isa::Portable => TileKernel {
                separate: portable::tile::<TargetMultiplyAdd>,
                fused: portable::tile::<TargetMultiplyAdd>,
                bf16: portable::tile_bf16,
                grouped_separate: portable::tile_grouped::<TargetMultiplyAdd>,
                grouped_fused: portable::tile_grouped::<TargetMultiplyAdd>,
                pairs: None,
                fma_when_exact: false,
            },
        }
    }

    /// Whether [`Steps::Fused`] runs other tiles than [`Steps::Mlx`]: an FMA that gives the
    /// separate rounding's bits where every product is exact, worth a scan of the operands'
    /// [`Magnitudes`](super::magnitudes::Magnitudes) to find out (the x86 kernels). False where
    /// both are one tile function: the portable kernel, and NEON, whose fused step is aarch64's
    /// rule itself.
    #[inline(always)]
    pub(crate) fn fma_when_exact(self) -> bool {
        self.fma_when_exact
    }

    /// `tile = (accumulate ? tile : 0) + a · b` over `kc` steps, each as [`Steps::Mlx`]; `a` holds at least `kc · MR` values, `b` at least `kc · NR`. With `exact`, the
    /// caller has checked that every product of `a`'s and `b`'s values is exact in `f32`, and
    /// an FMA may replace the multiply and add (else the bits may differ from MLX's). `next`
    /// is memory the caller reads soon after (a prefetch hint: spread over the steps).
    #[inline(always)]
    pub(crate) fn run(
        self,
        exact: bool,
        kc: usize,
        panels: (&[f32], &[f32]),
        tile: &mut [f32; TILE],
        accumulate: bool,
        next: &[f32],
    ) {
        let steps = if exact { Steps::Fused } else { Steps::Mlx };
        self.run_steps(steps, kc, panels, tile, accumulate, next);
    }

    /// [`TileKernel::run`] with the rounding of each step chosen by `steps` (the caller checked
    /// what [`Steps::Fused`] and [`Steps::Bf16`] require).
    #[inline(always)]
    pub(crate) fn run_steps(
        self,
        steps: Steps,
        kc: usize,
        (a, b): (&[f32], &[f32]),
        tile: &mut [f32; TILE],
        accumulate: bool,
        next: &[f32],
    ) {
        let f = match steps {
            Steps::Mlx => self.separate,
            Steps::Fused => self.fused,
            Steps::Bf16 => self.bf16,
        };
        let (a, b) = (&a[..kc * MR], &b[..kc * NR]);
        // SAFETY: the function runs on this CPU (see the type's contract); the slices above hold
        // `kc · MR` and `kc · NR` values and `tile` `MR · NR`, the extents the function reads
        // and writes; `next` is only prefetched.
        unsafe { f(kc, a.as_ptr(), b.as_ptr(), tile.as_mut_ptr(), accumulate, next.as_ptr(), next.len()) }
    }

    /// [`TileKernel::run_steps`] on two tiles that share the panel `b`: `tiles[t]` from the
    /// panel `a[t]` (each at least `kc · MR` values), with the same bits as two calls. `next`
    /// is prefetched over both.
    #[inline(always)]
    pub(crate) fn run_pair(
        self,
        steps: Steps,
        kc: usize,
        (a, b): ([&[f32]; 2], &[f32]),
        tiles: &mut [[f32; TILE]; 2],
        accumulate: bool,
        next: &[f32],
    ) {
        let pair = match (steps, self.pairs) {
            (Steps::Mlx, Some((separate, _))) => Some(separate),
            (Steps::Fused, Some((_, fused))) => Some(fused),
            _ => None,
        };
        let Some(f) = pair else {
            let (first, second) = next.split_at(next.len() / 2);
            let [t0, t1] = tiles;
            self.run_steps(steps, kc, (a[0], b), t0, accumulate, first);
            self.run_steps(steps, kc, (a[1], b), t1, accumulate, second);
            return;
        };
        let (a0, a1, b) = (&a[0][..kc * MR], &a[1][..kc * MR], &b[..kc * NR]);
        let [t0, t1] = tiles;
        // SAFETY: the function runs on this CPU (see the type's contract); the slices above hold
        // `kc · MR`, `kc · MR` and `kc · NR` values and the two distinct tiles `MR · NR` each, the
        // extents the function reads and writes; `next` is only prefetched.
        unsafe {
            f(
                kc,
                [a0.as_ptr(), a1.as_ptr()],
                b.as_ptr(),
                [t0.as_mut_ptr(), t1.as_mut_ptr()],
                accumulate,
                next.as_ptr(),
                next.len(),
            )
        }
    }

    /// `tile = tile + round(scales[g] · P_g)` for the `kc / group` groups in order, each `P_g`
    /// the sums of its `group` steps from zero, in float32 arithmetic ([`Steps::Mlx`] or,
    /// where the caller checked every product exact, [`Steps::Fused`]). `kc` is a multiple of
    /// `group`; `scales` holds `kc / group · NR` factors.
    #[inline(always)]
    pub(crate) fn run_grouped(
        self,
        fused: bool,
        (kc, group): (usize, usize),
        (a, b): (&[f32], &[f32]),
        scales: &[f32],
        tile: &mut [f32; TILE],
        next: &[f32],
    ) {
        let f = if fused { self.grouped_fused } else { self.grouped_separate };
        let groups = kc / group.max(1);
        let (a, b, scales) = (&a[..groups * group * MR], &b[..groups * group * NR], &scales[..groups * NR]);
        // SAFETY: the function runs on this CPU; the slices above hold the extents it reads
        // (for `groups · group` steps, `groups · NR` factors) and `tile` the ones it writes;
        // `next` is only prefetched.
        unsafe {
            f(
                groups * group,
                group.max(1),
                a.as_ptr(),
                b.as_ptr(),
                scales.as_ptr(),
                tile.as_mut_ptr(),
                next.as_ptr(),
                next.len(),
            )
        }
    }
}

impl fmt::Debug for TileKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TileKernel")
    }
}

#[cfg(test)]
mod tests {
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
    fn every_bf16_kernel_rounds_each_product_and_sum_to_bf16() {
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
