//! `exp_in_place` over 2394 × 768 float32 values (all cores), and the scalar twin (one core).

extern crate gemma_vision_kernels as kernels;
mod common;

use common::{HIDDEN, TOKENS, values};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kernels::exp::{exp, exp_in_place};

fn bench(c: &mut Criterion) {
    let n = TOKENS * HIDDEN;
    let x = values::<f32>(n, 20.0, 1);
    let mut y = x.clone();
    let mut group = c.benchmark_group("exp");
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function("float32", |b| {
        b.iter(|| {
            y.copy_from_slice(&x);
            exp_in_place(&mut y)
        })
    });
    group.bench_function("float32/scalar twin", |b| {
        b.iter(|| {
            for (o, &v) in y.iter_mut().zip(&x) {
                *o = exp(v);
            }
        })
    });
    group.finish();
}

criterion_group! { name = benches; config = common::config(); targets = bench }
criterion_main!(benches);
