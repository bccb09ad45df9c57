//! `tanh_slice` over 2394 × 768 float32 values, split over all cores as the GELU runs it, and
//! the C library's `tanhf` per element (one core), whose bits it has.

extern crate gemma_vision_kernels as kernels;
mod common;

use common::{HIDDEN, TOKENS, values};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kernels::parallel::for_row_blocks;
use kernels::tanh::{tanh, tanh_slice};

fn bench(c: &mut Criterion) {
    let n = TOKENS * HIDDEN;
    let x = values::<f32>(n, 4.0, 1);
    let mut y = vec![0f32; n];
    let mut group = c.benchmark_group("tanh");
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function("float32", |b| {
        b.iter(|| for_row_blocks(&mut y, 1, 1 << 14, |start, block| tanh_slice(&x[start..start + block.len()], block)))
    });
    group.bench_function("float32/C library, one core", |b| {
        b.iter(|| {
            for (o, &v) in y.iter_mut().zip(&x) {
                *o = tanh(v);
            }
        })
    });
    group.finish();
}

criterion_group! { name = benches; config = common::config(); targets = bench }
criterion_main!(benches);
