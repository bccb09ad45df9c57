//! `gelu_approx` at the E2B MLP's shape: `[1, 2520, 3072]`.

extern crate gemma_vision_layers as layers;
mod common;

use common::{INTERMEDIATE, TOKENS, normal, split_label};
use criterion::{Criterion, criterion_group, criterion_main};
use layers::gelu_approx;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("gelu_approx");
    group.sampling_mode(common::HEAVY_SAMPLING);
    for label in ["bfloat16", "float32"] {
        let (act, _, _) = split_label(label);
        let x = normal(&[1, TOKENS, INTERMEDIATE], 2.0, act, 16);
        common::fresh_cache();
        group.bench_function(label, |b| b.iter(|| gelu_approx(&x).unwrap().eval().unwrap()));
    }
    group.finish();
}

criterion_group! { name = benches; config = common::heavy(); targets = bench }
criterion_main!(benches);
