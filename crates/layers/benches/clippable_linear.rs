//! `ClippableLinear` at E2B shapes: `[1, 2520, 768] × [768, 768]ᵀ` with input and output clips.

extern crate gemma_vision_layers as layers;
mod common;

use common::{HEAD_DIM, HEADS, HIDDEN, TOKENS, clippable_keys, normal, split_label, weights};
use criterion::{Criterion, criterion_group, criterion_main};
use layers::ClippableLinear;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("clippable_linear");
    group.sampling_mode(common::HEAVY_SAMPLING);
    for label in ["bfloat16", "float32", "bfloat16+f32clip"] {
        let (act, wdt, clip) = split_label(label);
        let store = weights(&clippable_keys("", HIDDEN, HEADS * HEAD_DIM), wdt, clip);
        let layer = ClippableLinear::load(&store, HIDDEN, HEADS * HEAD_DIM, true).unwrap();
        let x = normal(&[1, TOKENS, HIDDEN], 1.5, act, 12);
        common::fresh_cache();
        group.bench_function(label, |b| b.iter(|| layer.forward(&x).unwrap().eval().unwrap()));
    }
    group.finish();
}

criterion_group! { name = benches; config = common::heavy(); targets = bench }
criterion_main!(benches);
