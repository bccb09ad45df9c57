//! The AVX2 micro-kernel: 6 × 16 accumulators in twelve `__m256` registers; per k step two
//! loads of `b`, six broadcasts of `a`, and for each accumulator a `_mm256_mul_ps` then a
//! `_mm256_add_ps` (never an FMA: the product is rounded before the add, as MLX's CPU matmul
//! rounds it).

use super::microkernel::{MR, NR, TILE};

/// Whether this CPU runs AVX2 code.
pub(crate) fn is_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `tile += a · b`, `a` = `kc × MR` and `b` = `kc × NR` packed (k-major), `kc = b.len() / NR`.
/// Falls back to the portable kernel (same bits) where AVX2 is missing.
pub(crate) fn tile(a: &[f32], b: &[f32], tile: &mut [f32; TILE]) {
    #[cfg(target_arch = "x86_64")]
    if is_available() {
        let kc = (a.len() / MR).min(b.len() / NR);
        // SAFETY: AVX2 is available (checked above); `a` holds at least `kc · MR` values, `b`
        // at least `kc · NR`, `tile` exactly `MR · NR`: the reads and writes below stay inside.
        unsafe { x86::tile_6x16(kc, a.as_ptr(), b.as_ptr(), tile.as_mut_ptr()) };
        return;
    }
    super::microkernel_portable::tile(a, b, tile);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// The 6 × 16 tile over `kc` steps.
    ///
    /// # Safety
    /// AVX2 must be available; `a` must be valid for `kc · MR` reads, `b` for `kc · NR`
    /// reads, `c` for `MR · NR` reads and writes.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn tile_6x16(kc: usize, a: *const f32, b: *const f32, c: *mut f32) {
        const _: () = assert!(MR == 6 && NR == 16);
        // SAFETY: every pointer offset below stays within the extents the caller guarantees.
        unsafe {
            let mut acc = [[_mm256_setzero_ps(); 2]; MR];
            for (i, row) in acc.iter_mut().enumerate() {
                row[0] = _mm256_loadu_ps(c.add(i * NR));
                row[1] = _mm256_loadu_ps(c.add(i * NR + 8));
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
}
