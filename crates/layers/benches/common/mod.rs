//! Shared pieces of the block benches: the real E2B shapes (those of the op parity suite,
//! crates/parity/python/ops.py), seeded random inputs and weights, and criterion settings.
//!
//! Benchmark ids are `<case>/<dtype label>` with the case names and labels of ops.py, so that
//! `cargo xtask bench ops` can put each beside the reference's timing of the same call.
#![allow(dead_code, reason = "each bench uses the part of this module it needs")]

use criterion::{Criterion, SamplingMode};
use layers::{MemoryStore, Weights};
use std::sync::Arc;
use std::time::Duration;
use tensor::{Array, Dtype};

/// The E2B encoder at a 42 × 60 patch grid (a 672 × 960 image).
pub const GRID: (i32, i32) = (42, 60);
pub const TOKENS: i32 = GRID.0 * GRID.1;
pub const HIDDEN: i32 = 768;
pub const INTERMEDIATE: i32 = 3072;
pub const HEADS: i32 = 12;
pub const HEAD_DIM: i32 = 64;
/// Rows of the unified embedder / embed_vision inputs (280 soft tokens).
pub const EMBED_TOKENS: i32 = 280;
/// The unified embedder's patch width (48 × 48 × 3) and its embedding width.
pub const PATCH_DIM: i32 = 6912;
pub const EMBED_DIM: i32 = 3840;
pub const ROPE_THETA: f64 = 100.0;

/// How a dtype label of ops.py splits: (activations, weights, clip bounds).
pub fn split_label(label: &str) -> (Dtype, Dtype, Dtype) {
    match label {
        "float32+bf16w" => (Dtype::F32, Dtype::Bf16, Dtype::Bf16),
        "bfloat16+f32clip" => (Dtype::Bf16, Dtype::Bf16, Dtype::F32),
        "float32" => (Dtype::F32, Dtype::F32, Dtype::F32),
        _ => (Dtype::Bf16, Dtype::Bf16, Dtype::Bf16),
    }
}

/// Seeded normal values (xorshift64* and Box–Muller) times `scale`, in `dtype`, evaluated.
pub fn normal(shape: &[i32], scale: f32, dtype: Dtype, seed: u64) -> Array {
    let n = shape.iter().map(|&d| d as usize).product::<usize>();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut uniform = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        ((state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 + 0.5) / (1u64 << 24) as f32
    };
    let mut values = Vec::with_capacity(n + 1);
    while values.len() < n {
        let (u, v) = (uniform(), uniform());
        let radius = (-2.0 * u.ln()).sqrt() * scale;
        let angle = std::f32::consts::TAU * v;
        values.push(radius * angle.cos());
        values.push(radius * angle.sin());
    }
    values.truncate(n);
    let array = Array::from_slice(&values, shape).unwrap().astype(dtype).unwrap();
    array.eval().unwrap();
    array
}

/// `(x, y)` ids of the row-major grid, int32 `[1, L, 2]`.
pub fn grid_positions() -> Array {
    let (_, cols) = GRID;
    let ids: Vec<i32> = (0..TOKENS).flat_map(|n| [n % cols, n / cols]).collect();
    Array::from_slice(&ids, &[1, TOKENS, 2]).unwrap()
}

/// The encoder's additive mask `[1, 1, L, L]` (0 where both tokens are real, -1e4 elsewhere),
/// with the last `padded` tokens padding.
pub fn additive_mask(tokens: i32, padded: i32, dtype: Dtype) -> Array {
    let valid: Vec<bool> = (0..tokens).map(|i| i < tokens - padded).collect();
    let valid = Array::from_bools(&valid, &[1, tokens]).unwrap();
    let pair = valid.expand_dims(1).unwrap().logical_and(valid.expand_dims(2).unwrap()).unwrap();
    let zero = Array::scalar(0.0f32).unwrap().astype(dtype).unwrap();
    let fill = Array::scalar(-1e4f32).unwrap().astype(dtype).unwrap();
    let mask = pair.select(&zero, &fill).unwrap().expand_dims(1).unwrap();
    mask.eval().unwrap();
    mask
}

/// Weights for the given `(key, shape)`s in `dtype` (0-d keys ending in a clip-bound name get
/// the bounds of ops.py in `clip_dtype`), as a [`Weights`] view.
pub fn weights(keys: &[(String, Vec<i32>)], dtype: Dtype, clip_dtype: Dtype) -> Weights {
    let arrays = keys.iter().zip(1u64..).map(|((key, shape), seed)| {
        let leaf = key.rsplit('.').next().unwrap_or(key);
        let array = match (leaf, shape.len()) {
            ("input_min", _) => bound(-2.0, clip_dtype),
            ("input_max", _) => bound(2.0, clip_dtype),
            ("output_min", _) => bound(-1.0, clip_dtype),
            ("output_max", _) => bound(1.0, clip_dtype),
            (_, 2) => normal(shape, 1.0 / (shape[1] as f32).sqrt(), dtype, seed),
            ("bias", _) => normal(shape, 0.1, dtype, seed),
            _ => normal(shape, 0.25, Dtype::F32, seed).add(1.0).unwrap().astype(dtype).unwrap(),
        };
        (key.clone(), array)
    });
    Weights::new(Arc::new(MemoryStore::from_arrays(arrays).unwrap()))
}

fn bound(value: f32, dtype: Dtype) -> Array {
    Array::scalar(value).unwrap().astype(dtype).unwrap()
}

/// The keys of a clippable projection `[out, in]` below `prefix`.
pub fn clippable_keys(prefix: &str, in_dim: i32, out_dim: i32) -> Vec<(String, Vec<i32>)> {
    let mut keys = vec![(format!("{prefix}linear.weight"), vec![out_dim, in_dim])];
    for bound in ["input_min", "input_max", "output_min", "output_max"] {
        keys.push((format!("{prefix}{bound}"), vec![]));
    }
    keys
}

/// The keys of a gemma4 vision MLP below `prefix`.
pub fn mlp_keys(prefix: &str) -> Vec<(String, Vec<i32>)> {
    let mut keys = clippable_keys(&format!("{prefix}gate_proj."), HIDDEN, INTERMEDIATE);
    keys.extend(clippable_keys(&format!("{prefix}up_proj."), HIDDEN, INTERMEDIATE));
    keys.extend(clippable_keys(&format!("{prefix}down_proj."), INTERMEDIATE, HIDDEN));
    keys
}

/// The keys of a gemma4 vision attention block below `prefix`.
pub fn attention_keys(prefix: &str) -> Vec<(String, Vec<i32>)> {
    let mut keys = Vec::new();
    for proj in ["q_proj", "k_proj", "v_proj", "o_proj"] {
        keys.extend(clippable_keys(&format!("{prefix}{proj}."), HIDDEN, HEADS * HEAD_DIM));
    }
    keys.push((format!("{prefix}q_norm.weight"), vec![HEAD_DIM]));
    keys.push((format!("{prefix}k_norm.weight"), vec![HEAD_DIM]));
    keys
}

/// The block config of the E2B encoder (clipped linears).
pub fn block_config() -> layers::VisionBlockConfig {
    layers::VisionBlockConfig {
        hidden_size: HIDDEN,
        intermediate_size: INTERMEDIATE,
        num_heads: HEADS,
        num_kv_heads: HEADS,
        head_dim: HEAD_DIM,
        rms_norm_eps: 1e-6,
        rope_theta: ROPE_THETA,
        clipped_linears: true,
    }
}

/// Empties MLX's buffer cache. Call right before each `bench_function`, as ops.py does before
/// each reference timing: what earlier cases left in the cache would otherwise decide how often
/// this one reaches the system allocator (which can change a millisecond block's time by 2×).
pub fn fresh_cache() {
    tensor::memory::clear_cache().unwrap();
}

/// Criterion for blocks of milliseconds.
pub fn light() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args()
}

/// Criterion for blocks of tens of milliseconds to tens of seconds: flat sampling (set with
/// [`HEAVY_SAMPLING`]), 10 samples filling about 5 s after a 1 s warm-up; a block slower than
/// half a second gets one run per sample.
pub fn heavy() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args()
}

/// Flat sampling (every sample the same iteration count) for heavy groups.
pub const HEAVY_SAMPLING: SamplingMode = SamplingMode::Flat;
