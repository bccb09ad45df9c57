//! `vision_rms_norm` at the e2b heads' shape `[2394 · 12, 64]` (bf16, float32, the scalar
//! twin with `powf` on one core), and `normalize_heads` (norm + RoPE in one pass).

extern crate gemma_vision_kernels as kernels;
mod common;

use common::{HEAD_DIM, HEADS, TOKENS, values};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use half::bf16;
use kernels::rope::RopePartition;
use kernels::vision_rms_norm::{normalize_heads, vision_rms_norm, vision_rms_norm_scalar};

fn bench(c: &mut Criterion) {
    let n = TOKENS * HEADS * HEAD_DIM;
    let mut group = c.benchmark_group("vision_rms_norm");
    group.throughput(Throughput::Elements(n as u64));
    let (x, w) = (values::<bf16>(n, 3.0, 1), values::<bf16>(HEAD_DIM, 1.0, 2));
    let mut out = vec![bf16::ZERO; n];
    group.bench_function("bfloat16", |b| b.iter(|| vision_rms_norm(&x, Some(&w), 1e-6, HEAD_DIM, &mut out).unwrap()));
    group.bench_function("bfloat16/scalar twin", |b| {
        b.iter(|| vision_rms_norm_scalar(&x, Some(&w), 1e-6, HEAD_DIM, &mut out).unwrap())
    });
    let c2 = HEAD_DIM / 2;
    let (cos, sin) = (values::<bf16>(TOKENS * c2, 0.5, 3), values::<bf16>(TOKENS * c2, 0.5, 4));
    let parts = [RopePartition::new(&cos, &sin, c2).unwrap(), RopePartition::new(&sin, &cos, c2).unwrap()];
    group.bench_function("bfloat16/normalize_heads with rope", |b| {
        b.iter(|| {
            out.copy_from_slice(&x);
            normalize_heads(&mut out, HEADS, HEAD_DIM, Some(&w), 1e-6, Some(&parts)).unwrap()
        })
    });
    let (x, w) = (values::<f32>(n, 3.0, 1), values::<f32>(HEAD_DIM, 1.0, 2));
    let mut out = vec![0f32; n];
    group.bench_function("float32", |b| b.iter(|| vision_rms_norm(&x, Some(&w), 1e-6, HEAD_DIM, &mut out).unwrap()));
    group.finish();
}

criterion_group! { name = benches; config = common::config(); targets = bench }
criterion_main!(benches);
