//! `kernels::gemm` at the models' shapes, in GFLOP/s (criterion's "elem/s" counts `2·M·N·K`
//! flops per product): x `[M, K]` times `W.T` with `W` `[N, K]` row-major, as `nn.Linear` runs.
//!
//! - e2b (tower of gemma4 e2b/e4b): M = 2394 tokens, (K, N) ∈ {(768, 768), (768, 3072),
//!   (3072, 768)}.
//! - 31b-shaped (26B/31B tower widths): M = 2394, (K, N) ∈ {(1152, 1152), (1152, 4304),
//!   (4304, 1152)}.
//! - unified embedder: 280 × 6912 → 3840 with a bias (`addmm`).
//!
//! Each shape runs as `bf16` (bf16 × bf16 → bf16), `f32` (f32 × f32 → f32) and `f32+bf16w`
//! (f32 activations, bf16 weights → f32). `GEMM_KERNEL=portable` benches the portable
//! micro-kernel instead of the detected one, `GEMM_KERNEL=avx2` the AVX2 one,
//! `GEMM_KERNEL=neon` the NEON one (aarch64); `RAYON_NUM_THREADS` sets the threads.

extern crate gemma_vision_kernels as kernels;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use half::bf16;
use kernels::Float;
use kernels::gemm::{Blocking, GemmOptions, MatRef, MicroKernel, gemm_with};
use std::time::Duration;

struct Shape {
    group: &'static str,
    m: usize,
    k: usize,
    n: usize,
    bias: bool,
}

const SHAPES: [Shape; 7] = [
    Shape { group: "e2b", m: 2394, k: 768, n: 768, bias: false },
    Shape { group: "e2b", m: 2394, k: 768, n: 3072, bias: false },
    Shape { group: "e2b", m: 2394, k: 3072, n: 768, bias: false },
    Shape { group: "31b", m: 2394, k: 1152, n: 1152, bias: false },
    Shape { group: "31b", m: 2394, k: 1152, n: 4304, bias: false },
    Shape { group: "31b", m: 2394, k: 4304, n: 1152, bias: false },
    Shape { group: "unified", m: 280, k: 6912, n: 3840, bias: true },
];

/// `len` pseudo-random values in [-1, 1) (a fixed LCG: benches need no rand crate).
fn values<T: Float>(len: usize, seed: u64) -> Vec<T> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            T::from_f32(((state >> 40) as f32 / (1u64 << 23) as f32) - 1.0)
        })
        .collect()
}

fn kernel() -> MicroKernel {
    match std::env::var("GEMM_KERNEL").as_deref() {
        Ok("portable") => MicroKernel::Portable,
        Ok("avx2") => MicroKernel::Avx2,
        Ok("neon") => MicroKernel::Neon,
        _ => MicroKernel::detect(),
    }
}

fn run<X: Float, W: Float, O: Float>(c: &mut Criterion, shape: &Shape, label: &str) {
    let Shape { group, m, k, n, bias } = *shape;
    let x = values::<X>(m * k, 1);
    let w = values::<W>(n * k, 2);
    let bias_values = values::<O>(n, 3);
    let a = MatRef::row_major(&x, m, k).unwrap();
    let b = MatRef::row_major(&w, n, k).unwrap().t();
    let options = GemmOptions { bias: bias.then_some(&bias_values[..]), ..GemmOptions::default() };
    let mut out = vec![O::default(); m * n];
    let kernel = kernel();
    let blocking = Blocking::for_shape(m, k, n);
    let mut group = c.benchmark_group(format!("gemm/{group}"));
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements((2 * m * n * k) as u64));
    group.bench_function(BenchmarkId::new(label, format!("{m}x{k}x{n}")), |bencher| {
        bencher.iter(|| gemm_with(kernel, blocking, a, b, &mut out, &options).unwrap())
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    for shape in &SHAPES {
        run::<bf16, bf16, bf16>(c, shape, "bf16");
        run::<f32, f32, f32>(c, shape, "f32");
        run::<f32, bf16, f32>(c, shape, "f32+bf16w");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
