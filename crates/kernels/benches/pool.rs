//! `pool` (the pooler's one-hot average) at the e2b shape: 42 × 57 patches of 768 features
//! pooled 3 × 3 into 266 slots, bf16 and float32.
mod common;

use common::{HIDDEN, TOKENS, values};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use half::bf16;
use kernels::Float;
use kernels::pool::pool;

fn run<T: Float>(c: &mut Criterion, label: &str) {
    let (rows, cols, k) = (42, 57, 3);
    assert_eq!(rows * cols, TOKENS);
    let slots: Vec<usize> = (0..TOKENS).map(|n| (n % cols) / k + (cols / k) * ((n / cols) / k)).collect();
    let length = (rows / k) * (cols / k);
    let h = values::<T>(TOKENS * HIDDEN, 3.0, 1);
    let mut out = vec![T::default(); length * HIDDEN];
    let mut group = c.benchmark_group("pool");
    group.throughput(Throughput::Elements((TOKENS * HIDDEN) as u64));
    group.bench_function(label, |b| b.iter(|| pool(&h, &slots, HIDDEN, length, 1.0 / 9.0, &mut out).unwrap()));
    group.finish();
}

fn bench(c: &mut Criterion) {
    run::<bf16>(c, "bfloat16");
    run::<f32>(c, "float32");
}

criterion_group! { name = benches; config = common::config(); targets = bench }
criterion_main!(benches);
