//! `rope` (apply_multidimensional_rope, two partitions) at the e2b queries' shape
//! `[2394, 12, 64]`, bf16 and float32, in place over all cores; the scalar twin on one core.

extern crate gemma_vision_kernels as kernels;
mod common;

use common::{HEAD_DIM, HEADS, TOKENS, values};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use half::bf16;
use kernels::Float;
use kernels::rope::{RopePartition, rope, rope_scalar};

fn run<T: Float>(c: &mut Criterion, label: &str, twin: bool) {
    let n = TOKENS * HEADS * HEAD_DIM;
    let c2 = HEAD_DIM / 2;
    let x = values::<T>(n, 3.0, 1);
    let (cos, sin) = (values::<T>(TOKENS * c2, 0.5, 3), values::<T>(TOKENS * c2, 0.5, 4));
    let parts = [RopePartition::new(&cos, &sin, c2).unwrap(), RopePartition::new(&sin, &cos, c2).unwrap()];
    let mut out = vec![T::default(); n];
    let mut group = c.benchmark_group("rope");
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(label, |b| b.iter(|| rope(&x, HEADS, HEAD_DIM, &parts, &mut out).unwrap()));
    if twin {
        group.bench_function(format!("{label}/scalar twin"), |b| {
            b.iter(|| rope_scalar(&x, HEADS, HEAD_DIM, &parts, &mut out).unwrap())
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    run::<bf16>(c, "bfloat16", true);
    run::<f32>(c, "float32", false);
}

criterion_group! { name = benches; config = common::config(); targets = bench }
criterion_main!(benches);
