//! `add` (the residual add) at the e2b hidden state's size `2394 × 768`, bf16 and float32.

extern crate gemma_vision_kernels as kernels;
mod common;

use common::{HIDDEN, TOKENS, values};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use half::bf16;
use kernels::Float;
use kernels::elementwise::{add, add_in_place};

fn run<T: Float>(c: &mut Criterion, label: &str) {
    let n = TOKENS * HIDDEN;
    let (a, b) = (values::<T>(n, 3.0, 1), values::<T>(n, 3.0, 2));
    let mut out = vec![T::default(); n];
    let mut group = c.benchmark_group("add");
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(label, |bench| bench.iter(|| add(&a, &b, &mut out).unwrap()));
    group.bench_function(format!("{label}/in place"), |bench| bench.iter(|| add_in_place(&mut out, &b).unwrap()));
    group.finish();
}

fn bench(c: &mut Criterion) {
    run::<bf16>(c, "bfloat16");
    run::<f32>(c, "float32");
}

criterion_group! { name = benches; config = common::config(); targets = bench }
criterion_main!(benches);
