//! The register tile and the choice of micro-kernel that computes it.
//!
//! A micro-kernel updates one `MR × NR` tile of `f32` accumulators (row-major in a slice) with
//! `kc` rank-1 updates: for each k in order, every accumulator gets `acc = acc + a_i · b_j` with
//! the product rounded first. `a` is a packed micro-panel (`kc × MR`, k-major), `b` one of
//! `kc × NR`. All kernels give the same bits.

use super::{microkernel_avx2, microkernel_portable};

/// Rows of the register tile.
pub(crate) const MR: usize = 6;
/// Columns of the register tile (two AVX vectors).
pub(crate) const NR: usize = 16;
/// Accumulators of one tile.
pub(crate) const TILE: usize = MR * NR;

/// Which micro-kernel computes the tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MicroKernel {
    /// AVX2 intrinsics (`_mm256_mul_ps` then `_mm256_add_ps`).
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
        if microkernel_avx2::is_available() {
            kernels.push(MicroKernel::Avx2);
        }
        kernels
    }

    /// `tile += a · b` over `kc` steps (see the module docs); `a` holds at least `kc · MR`
    /// values, `b` at least `kc · NR`.
    #[inline]
    pub(crate) fn run(self, kc: usize, a: &[f32], b: &[f32], tile: &mut [f32; TILE]) {
        let (a, b) = (&a[..kc * MR], &b[..kc * NR]);
        match self {
            MicroKernel::Avx2 if microkernel_avx2::is_available() => microkernel_avx2::tile(a, b, tile),
            _ => microkernel_portable::tile(a, b, tile),
        }
    }
}
