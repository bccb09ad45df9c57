//! Fused `RmsNorm` at E2B shapes: a block norm `[1, 2520, 768]` (weight `[768]`) and
//! embed_vision's parameter-free norm `[1, 280, 768]`.

extern crate gemma_vision_layers as layers;
mod common;

use common::{EMBED_TOKENS, HIDDEN, TOKENS, normal, split_label, weights};
use criterion::{Criterion, criterion_group, criterion_main};
use layers::RmsNorm;

fn bench(c: &mut Criterion) {
    for (case, tokens, scaled) in [("rms_norm", TOKENS, true), ("rms_norm_no_scale", EMBED_TOKENS, false)] {
        let mut group = c.benchmark_group(case);
        for label in ["bfloat16", "float32"] {
            let (act, wdt, _) = split_label(label);
            let norm = if scaled {
                RmsNorm::load(&weights(&[("weight".to_owned(), vec![HIDDEN])], wdt, wdt), HIDDEN, 1e-6).unwrap()
            } else {
                RmsNorm::no_scale(1e-6, layers::Execution::Mlx)
            };
            let x = normal(&[1, tokens, HIDDEN], 3.0, act, 13);
            common::fresh_cache();
            group.bench_function(label, |b| b.iter(|| norm.forward(&x).unwrap().eval().unwrap()));
        }
        group.finish();
    }
}

criterion_group! { name = benches; config = common::light(); targets = bench }
criterion_main!(benches);
