//! `VisionRmsNorm` (the float32 head norms) at E2B shapes: `[1, 2520, 12, 64]`, with and without
//! a weight `[64]`.

extern crate gemma_vision_layers as layers;
mod common;

use common::{HEAD_DIM, HEADS, TOKENS, normal, split_label, weights};
use criterion::{Criterion, criterion_group, criterion_main};
use layers::VisionRmsNorm;

fn bench(c: &mut Criterion) {
    for (case, scaled) in [("vision_rms_norm", true), ("vision_rms_norm_no_scale", false)] {
        let mut group = c.benchmark_group(case);
        for label in ["bfloat16", "float32"] {
            let (act, wdt, _) = split_label(label);
            let norm = if scaled {
                VisionRmsNorm::load(&weights(&[("weight".to_owned(), vec![HEAD_DIM])], wdt, wdt), HEAD_DIM).unwrap()
            } else {
                VisionRmsNorm::no_scale(layers::Execution::Mlx)
            };
            let x = normal(&[1, TOKENS, HEADS, HEAD_DIM], 3.0, act, 14);
            common::fresh_cache();
            group.bench_function(label, |b| b.iter(|| norm.forward(&x).unwrap().eval().unwrap()));
        }
        group.finish();
    }
}

criterion_group! { name = benches; config = common::light(); targets = bench }
criterion_main!(benches);
