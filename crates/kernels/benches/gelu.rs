//! `gelu_approx(gate) * up` at the e2b MLP's shape `[2394, 3072]`: bf16 (table) and float32
//! (powf + tanhf per element) over all cores; the bf16 scalar twin on one core.

extern crate gemma_vision_kernels as kernels;
mod common;

use common::{INTERMEDIATE, TOKENS, values};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use half::bf16;
use kernels::gelu::{CubicTerm, gelu_approx_mul, gelu_approx_mul_scalar};

fn bench(c: &mut Criterion) {
    let n = TOKENS * INTERMEDIATE;
    let mut group = c.benchmark_group("gelu_approx_mul");
    group.throughput(Throughput::Elements(n as u64));
    let (gate, up) = (values::<bf16>(n, 2.0, 1), values::<bf16>(n, 2.0, 2));
    let mut out = vec![bf16::ZERO; n];
    gelu_approx_mul(CubicTerm::Separate, &gate[..8], &up[..8], &mut out[..8]).unwrap(); // builds the table
    group
        .bench_function("bfloat16", |b| b.iter(|| gelu_approx_mul(CubicTerm::Separate, &gate, &up, &mut out).unwrap()));
    group.bench_function("bfloat16/scalar twin", |b| {
        b.iter(|| gelu_approx_mul_scalar(CubicTerm::Separate, &gate, &up, &mut out).unwrap())
    });
    let (gate, up) = (values::<f32>(n, 2.0, 1), values::<f32>(n, 2.0, 2));
    let mut out = vec![0f32; n];
    group.bench_function("float32", |b| b.iter(|| gelu_approx_mul(CubicTerm::Separate, &gate, &up, &mut out).unwrap()));
    group.finish();
}

criterion_group! { name = benches; config = common::config(); targets = bench }
criterion_main!(benches);
