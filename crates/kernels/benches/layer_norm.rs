//! `layer_norm` (fast.layer_norm) as gemma4's unified embedder runs it: float32 activations,
//! parameters in float32 (cast from bf16), `[2394, 768]` and the patch norm `[280, 6912]`.

extern crate gemma_vision_kernels as kernels;
mod common;

use common::{HIDDEN, TOKENS, values};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kernels::layer_norm::{layer_norm, layer_norm_scalar};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("layer_norm");
    for (label, rows, dim) in [("float32 [2394, 768]", TOKENS, HIDDEN), ("float32 [280, 6912]", 280, 6912)] {
        group.throughput(Throughput::Elements((rows * dim) as u64));
        let x = values::<f32>(rows * dim, 3.0, 1);
        let (w, b) = (values::<f32>(dim, 1.0, 2), values::<f32>(dim, 0.1, 3));
        let mut out = vec![0f32; x.len()];
        group.bench_function(label, |bench| {
            bench.iter(|| layer_norm(&x, Some(&w), Some(&b), 1e-5, dim, &mut out).unwrap())
        });
        group.bench_function(format!("{label}/scalar twin"), |bench| {
            bench.iter(|| layer_norm_scalar(&x, Some(&w), Some(&b), 1e-5, dim, &mut out).unwrap())
        });
    }
    group.finish();
}

criterion_group! { name = benches; config = common::config(); targets = bench }
criterion_main!(benches);
