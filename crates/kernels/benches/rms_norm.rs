//! `rms_norm` (fast.rms_norm) at the e2b block norm's shape `[2394, 768]`, bf16 and float32,
//! over all cores; the scalar twin on one core for scale.

extern crate gemma_vision_kernels as kernels;
mod common;

use common::{HIDDEN, TOKENS, values};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use half::bf16;
use kernels::rms_norm::{rms_norm, rms_norm_scalar};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("rms_norm");
    group.throughput(Throughput::Elements((TOKENS * HIDDEN) as u64));
    let (x, w) = (values::<bf16>(TOKENS * HIDDEN, 3.0, 1), values::<bf16>(HIDDEN, 1.0, 2));
    let mut out = vec![bf16::ZERO; x.len()];
    group.bench_function("bfloat16", |b| b.iter(|| rms_norm(&x, Some(&w), 1e-6, HIDDEN, &mut out).unwrap()));
    group.bench_function("bfloat16/scalar twin", |b| {
        b.iter(|| rms_norm_scalar(&x, Some(&w), 1e-6, HIDDEN, &mut out).unwrap())
    });
    let (x, w) = (values::<f32>(TOKENS * HIDDEN, 3.0, 1), values::<f32>(HIDDEN, 1.0, 2));
    let mut out = vec![0f32; x.len()];
    group.bench_function("float32", |b| b.iter(|| rms_norm(&x, Some(&w), 1e-6, HIDDEN, &mut out).unwrap()));
    group.finish();
}

criterion_group! { name = benches; config = common::config(); targets = bench }
criterion_main!(benches);
