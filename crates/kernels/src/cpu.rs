//! What the CPU can do, checked once at run time.

use std::sync::OnceLock;

/// Whether the AVX2 + FMA kernels may run: the CPU has both, and `KERNELS_PORTABLE` is not
/// set in the environment (which forces the portable loops, for tests and comparisons).
pub fn has_avx2_fma() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| std::env::var_os("KERNELS_PORTABLE").is_none() && detect_avx2_fma())
}

/// Whether the AVX-512 micro-kernels may run beside the AVX2 ones: [`has_avx2_fma`], the CPU
/// has AVX-512F, and `KERNELS_AVX2` is not set in the environment (which keeps the AVX2 kernels
/// alone, for tests and comparisons).
pub fn has_avx512f() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| has_avx2_fma() && std::env::var_os("KERNELS_AVX2").is_none() && detect_avx512f())
}

#[cfg(target_arch = "x86_64")]
fn detect_avx512f() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_avx512f() -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
fn detect_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_avx2_fma() -> bool {
    false
}
