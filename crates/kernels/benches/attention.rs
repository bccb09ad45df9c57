//! `kernels::attention` at the towers' shapes, in GFLOP/s of its two products (criterion's
//! "elem/s" counts `4·B·Hq·Lq·Lk·D` flops: `q kᵀ` and `p v`; the softmax is not counted).
//!
//! - e2b: B = 1, 12 heads, L = 2394 tokens, D = 64;
//! - 31b-shaped: 16 heads, D = 72;
//!
//! each in bf16 and float32, with gemma4's `[1, 1, L, L]` additive mask (always passed by the
//! tower) and without. `GEMM_KERNEL=portable` benches the portable kernels, `GEMM_KERNEL=avx2`
//! the AVX2 ones, `GEMM_KERNEL=neon` the NEON ones (aarch64); `RAYON_NUM_THREADS` sets the
//! threads.

extern crate gemma_vision_kernels as kernels;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use half::bf16;
use kernels::Float;
use kernels::attention::{AttentionInputs, AttentionShape, MaskRef, attention_with};
use kernels::gemm::MicroKernel;
use kernels::testing::{lcg_values, tower_mask};
use std::time::Duration;

const TOKENS: usize = 2394;

fn kernel() -> MicroKernel {
    match std::env::var("GEMM_KERNEL").as_deref() {
        Ok("portable") => MicroKernel::Portable,
        Ok("avx2") => MicroKernel::Avx2,
        Ok("neon") => MicroKernel::Neon,
        _ => MicroKernel::detect(),
    }
}

fn run<T: Float>(c: &mut Criterion, group: &str, heads: usize, head_dim: usize, label: &str) {
    let shape =
        AttentionShape { batch: 1, query_heads: heads, kv_heads: heads, queries: TOKENS, keys: TOKENS, head_dim };
    let n = TOKENS * heads * head_dim;
    let (q, k, v) = (lcg_values::<T>(n, 1, 2.0), lcg_values::<T>(n, 2, 2.0), lcg_values::<T>(n, 3, 1.0));
    // The tower's mask: zeros among real patches, -1e4 to and from the last 100 (padding).
    let mask: Vec<T> = tower_mask(TOKENS, TOKENS - 100);
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
                attention_with(kernel, AttentionInputs { shape, q: &q, k: &k, v: &v, scale: 1.0, mask }, &mut out)
                    .unwrap()
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
