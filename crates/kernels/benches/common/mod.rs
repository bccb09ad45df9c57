//! Shared pieces of the kernel benches: the e2b shapes, seeded inputs, criterion settings.
#![allow(dead_code, reason = "each bench uses the part of this module it needs")]

use criterion::Criterion;
use kernels::Float;
use std::time::Duration;

/// Patch tokens of the e2b encoder at a 42 × 57 grid, its hidden and MLP widths, its heads.
pub const TOKENS: usize = 2394;
pub const HIDDEN: usize = 768;
pub const INTERMEDIATE: usize = 3072;
pub const HEADS: usize = 12;
pub const HEAD_DIM: usize = 64;

/// Seeded values of roughly normal spread (a sum of uniforms) times `scale`, in `T`.
pub fn values<T: Float>(n: usize, scale: f32, seed: u64) -> Vec<T> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut uniform = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    (0..n).map(|_| T::from_f32((uniform() + uniform() + uniform() + uniform()) * scale)).collect()
}

/// Short runs: the benches are for comparisons and for the lead to re-run on a quiet machine.
pub fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
}
