//! The AVX2 micro-kernels: 6 × 16 accumulators in twelve `__m256` registers; per k step two
//! loads of `b`, six broadcasts of `a`, and for each accumulator a `_mm256_mul_ps` then a
//! `_mm256_add_ps` (the product rounded before the add, as MLX's CPU matmul rounds it), or,
//! where every product is exact, one `_mm256_fmadd_ps` (the same bits, fewer instructions).

use super::microkernel::TileKernel;

/// The AVX2 kernels when this CPU runs AVX2 code (the fused one where it also has FMA).
pub(crate) fn resolve() -> Option<TileKernel> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        let fused: super::microkernel::TileFn =
            if std::arch::is_x86_feature_detected!("fma") { x86::tile_6x16_fused } else { x86::tile_6x16 };
        return Some(TileKernel { separate: x86::tile_6x16, fused });
    }
    None
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::super::microkernel::{MR, NR};
    use std::arch::x86_64::*;

    /// [`TileKernel`](super::TileKernel)'s contract for the 6 × 16 tile.
    ///
    /// # Safety
    /// AVX2 must be available; `a` must be valid for `kc · MR` reads, `b` for `kc · NR`
    /// reads, `c` for `MR · NR` reads and writes.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn tile_6x16(kc: usize, a: *const f32, b: *const f32, c: *mut f32, accumulate: bool) {
        const _: () = assert!(MR == 6 && NR == 16);
        // SAFETY: every pointer offset below stays within the extents the caller guarantees.
        unsafe {
            let mut acc = [[_mm256_setzero_ps(); 2]; MR];
            if accumulate {
                for (i, row) in acc.iter_mut().enumerate() {
                    row[0] = _mm256_loadu_ps(c.add(i * NR));
                    row[1] = _mm256_loadu_ps(c.add(i * NR + 8));
                }
            }
            let (mut a, mut b) = (a, b);
            for _ in 0..kc {
                let b0 = _mm256_loadu_ps(b);
                let b1 = _mm256_loadu_ps(b.add(8));
                for (i, row) in acc.iter_mut().enumerate() {
                    let x = _mm256_broadcast_ss(&*a.add(i));
                    row[0] = _mm256_add_ps(row[0], _mm256_mul_ps(x, b0));
                    row[1] = _mm256_add_ps(row[1], _mm256_mul_ps(x, b1));
                }
                a = a.add(MR);
                b = b.add(NR);
            }
            for (i, row) in acc.iter().enumerate() {
                _mm256_storeu_ps(c.add(i * NR), row[0]);
                _mm256_storeu_ps(c.add(i * NR + 8), row[1]);
            }
        }
    }

    /// [`tile_6x16`] with `acc = fma(a, b, acc)`: the same bits where every product is exact.
    ///
    /// # Safety
    /// As [`tile_6x16`], and FMA must be available.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile_6x16_fused(kc: usize, a: *const f32, b: *const f32, c: *mut f32, accumulate: bool) {
        // SAFETY: every pointer offset below stays within the extents the caller guarantees.
        unsafe {
            let mut acc = [[_mm256_setzero_ps(); 2]; MR];
            if accumulate {
                for (i, row) in acc.iter_mut().enumerate() {
                    row[0] = _mm256_loadu_ps(c.add(i * NR));
                    row[1] = _mm256_loadu_ps(c.add(i * NR + 8));
                }
            }
            let (mut a, mut b) = (a, b);
            for _ in 0..kc {
                let b0 = _mm256_loadu_ps(b);
                let b1 = _mm256_loadu_ps(b.add(8));
                for (i, row) in acc.iter_mut().enumerate() {
                    let x = _mm256_broadcast_ss(&*a.add(i));
                    row[0] = _mm256_fmadd_ps(x, b0, row[0]);
                    row[1] = _mm256_fmadd_ps(x, b1, row[1]);
                }
                a = a.add(MR);
                b = b.add(NR);
            }
            for (i, row) in acc.iter().enumerate() {
                _mm256_storeu_ps(c.add(i * NR), row[0]);
                _mm256_storeu_ps(c.add(i * NR + 8), row[1]);
            }
        }
    }
}
