//! The choice of micro-kernel that computes the register tile ([`tile`](super::tile)).
//!
//! A micro-kernel updates one `MR × NR` tile of `f32` accumulators (row-major in a slice) with
//! `kc` rank-1 updates: for each k in order, every accumulator gets `acc = acc + a_i · b_j` with
//! the product rounded first. `a` is a packed micro-panel (`kc × MR`, k-major), `b` one of
//! `kc × NR`. All kernels give the same bits (the fused variant only where every product is
//! exact, see [`magnitudes`](super::magnitudes)).

use super::tile::{MR, NR, TILE, TileFn};
use super::{microkernel_avx2, microkernel_portable};
use std::fmt;

/// Which micro-kernel computes the tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MicroKernel {
    /// AVX2 intrinsics (`_mm256_mul_ps` then `_mm256_add_ps`, or FMA where exact).
    Avx2,
    /// Plain Rust over fixed-size arrays (auto-vectorised at the baseline target).
    Portable,
}

impl MicroKernel {
    /// AVX2 when [`cpu::has_avx2_fma`](crate::cpu::has_avx2_fma) allows it, else portable.
    pub fn detect() -> MicroKernel {
        if crate::cpu::has_avx2_fma() { MicroKernel::Avx2 } else { MicroKernel::Portable }
    }

    /// Every kernel this CPU can run (the portable one always).
    pub fn available() -> Vec<MicroKernel> {
        let mut kernels = vec![MicroKernel::Portable];
        if microkernel_avx2::tiles().is_some() {
            kernels.push(MicroKernel::Avx2);
        }
        kernels
    }

    /// This kernel, resolved for the running CPU (the portable one where AVX2 is missing).
    pub(crate) fn resolve(self) -> TileKernel {
        let portable = TileKernel { separate: microkernel_portable::tile, fused: microkernel_portable::tile };
        match self {
            MicroKernel::Avx2 => {
                microkernel_avx2::tiles().map(|(separate, fused)| TileKernel { separate, fused }).unwrap_or(portable)
            }
            MicroKernel::Portable => portable,
        }
    }
}

/// A micro-kernel's tile functions: `separate` multiplies then adds (MLX's rounding, always
/// right); `fused` may use an FMA, which gives the same bits only where every product is exact
/// (see [`magnitudes`](super::magnitudes)).
///
/// Only the kernel modules make one, of functions the running CPU executes; calling them is
/// sound whenever the pointers are valid for those extents.
#[derive(Clone, Copy)]
pub(crate) struct TileKernel {
    pub(crate) separate: TileFn,
    pub(crate) fused: TileFn,
}

impl TileKernel {
    /// `tile = (accumulate ? tile : 0) + a · b` over `kc` steps, each product rounded before
    /// its add; `a` holds at least `kc · MR` values, `b` at least `kc · NR`. With `exact`, the
    /// caller has checked that every product of `a`'s and `b`'s values is exact in `f32`, and
    /// an FMA may replace the multiply and add (else the bits may differ from MLX's). `next`
    /// is memory the caller reads soon after (a prefetch hint: spread over the steps, one
    /// cache line per four).
    #[inline(always)]
    pub(crate) fn run(
        self,
        exact: bool,
        kc: usize,
        (a, b): (&[f32], &[f32]),
        tile: &mut [f32; TILE],
        accumulate: bool,
        next: &[f32],
    ) {
        let f = if exact { self.fused } else { self.separate };
        let (a, b) = (&a[..kc * MR], &b[..kc * NR]);
        // SAFETY: the function runs on this CPU (see the type's contract); the slices above hold
        // `kc · MR` and `kc · NR` values and `tile` `MR · NR`, the extents the function reads
        // and writes; `next` is only prefetched.
        unsafe { f(kc, a.as_ptr(), b.as_ptr(), tile.as_mut_ptr(), accumulate, next.as_ptr(), next.len()) }
    }
}

impl fmt::Debug for TileKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TileKernel")
    }
}
