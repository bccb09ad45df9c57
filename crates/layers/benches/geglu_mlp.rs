//! `GegluMlp` at E2B shapes: `[1, 2520, 768]` through 768 → 3072 → 768, clipped projections.

extern crate gemma_vision_layers as layers;
mod common;

use common::{HIDDEN, INTERMEDIATE, TOKENS, mlp_keys, normal, split_label, weights};
use criterion::{Criterion, criterion_group, criterion_main};
use layers::GegluMlp;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("geglu_mlp");
    group.sampling_mode(common::HEAVY_SAMPLING);
    for label in ["bfloat16", "float32"] {
        let (act, wdt, clip) = split_label(label);
        let mlp = GegluMlp::load(&weights(&mlp_keys(""), wdt, clip), HIDDEN, INTERMEDIATE, true).unwrap();
        let x = normal(&[1, TOKENS, HIDDEN], 1.0, act, 17);
        common::fresh_cache();
        group.bench_function(label, |b| b.iter(|| mlp.forward(&x).unwrap().eval().unwrap()));
    }
    group.finish();
}

criterion_group! { name = benches; config = common::heavy(); targets = bench }
criterion_main!(benches);
