//! `kernels::attention` at the towers' shapes, in GFLOP/s of its two products (criterion's
//! "elem/s" counts `4·B·Hq·Lq·Lk·D` flops: `q kᵀ` and `p v`; the softmax is not counted).
//!
//! - e2b: B = 1, 12 heads, L = 2394 tokens, D = 64;
//! - 31b-shaped: 16 heads, D = 72;
//!
//! each in bf16 and float32, with gemma4's `[1, 1, L, L]` additive mask (always passed by the
//! tower) and without. `GEMM_KERNEL=portable` benches the portable kernels; `RAYON_NUM_THREADS`
//! sets the threads.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use half::bf16;
use kernels::Float;
use kernels::attention::{AttentionShape, MaskRef, attention_with};
use kernels::gemm::MicroKernel;
use std::time::Duration;

const TOKENS: usize = 2394;

/// `len` pseudo-random values in `[-scale, scale)` (a fixed LCG).
fn values<T: Float>(len: usize, seed: u64, scale: f32) -> Vec<T> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            T::from_f32((((state >> 40) as f32 / (1u64 << 23) as f32) - 1.0) * scale)
        })
        .collect()
}

fn kernel() -> MicroKernel {
    match std::env::var("GEMM_KERNEL").as_deref() {
        Ok("portable") => MicroKernel::Portable,
        _ => MicroKernel::detect(),
    }
}

fn run<T: Float>(c: &mut Criterion, group: &str, heads: usize, head_dim: usize, label: &str) {
    let shape =
        AttentionShape { batch: 1, query_heads: heads, kv_heads: heads, queries: TOKENS, keys: TOKENS, head_dim };
    let n = TOKENS * heads * head_dim;
    let (q, k, v) = (values::<T>(n, 1, 2.0), values::<T>(n, 2, 2.0), values::<T>(n, 3, 1.0));
    // The tower's mask: zeros among real patches, -1e4 to and from the last 100 (padding).
    let real = TOKENS - 100;
    let mask: Vec<T> = (0..TOKENS * TOKENS)
        .map(|x| T::from_f32(if x / TOKENS < real && x % TOKENS < real { 0.0 } else { -1e4 }))
        .collect();
    let mut out = vec![T::default(); n];
    let kernel = kernel();
    let mut bench = c.benchmark_group(format!("attention/{group}"));
    bench.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(6));
    bench.throughput(Throughput::Elements((4 * heads * TOKENS * TOKENS * head_dim) as u64));
    for masked in [true, false] {
        let id = BenchmarkId::new(label, if masked { "mask" } else { "no mask" });
        bench.bench_function(id, |bencher| {
            bencher.iter(|| {
                let mask = masked.then(|| MaskRef::new(&mask, 1, 1));
                attention_with(kernel, shape, &q, &k, &v, 1.0, mask, &mut out).unwrap()
            })
        });
    }
    bench.finish();
}

fn bench(c: &mut Criterion) {
    for (group, heads, head_dim) in [("e2b", 12, 64), ("31b", 16, 72)] {
        run::<bf16>(c, group, heads, head_dim, "bf16");
        run::<f32>(c, group, heads, head_dim, "f32");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
