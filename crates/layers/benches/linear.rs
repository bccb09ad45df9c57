//! `Linear` at E2B shapes: a q projection `[1, 2520, 768] × [768, 768]ᵀ` and the unified
//! embedder's biased patch projection `[1, 280, 6912] × [3840, 6912]ᵀ + [3840]` (addmm).

extern crate gemma_vision_layers as layers;
mod common;

use common::{EMBED_DIM, EMBED_TOKENS, HEAD_DIM, HEADS, HIDDEN, PATCH_DIM, TOKENS, normal, split_label, weights};
use criterion::{Criterion, criterion_group, criterion_main};
use layers::Linear;

/// One projection shape: `[1, tokens, in_dim] × [out_dim, in_dim]ᵀ (+ [out_dim])`.
struct Case {
    name: &'static str,
    tokens: i32,
    in_dim: i32,
    out_dim: i32,
    bias: bool,
}

fn bench(c: &mut Criterion) {
    let cases = [
        Case { name: "linear", tokens: TOKENS, in_dim: HIDDEN, out_dim: HEADS * HEAD_DIM, bias: false },
        Case { name: "linear_bias", tokens: EMBED_TOKENS, in_dim: PATCH_DIM, out_dim: EMBED_DIM, bias: true },
    ];
    for Case { name: case, tokens, in_dim, out_dim, bias } in cases {
        let labels: &[&str] = if bias { &["bfloat16", "float32", "float32+bf16w"] } else { &["bfloat16", "float32"] };
        let mut group = c.benchmark_group(case);
        group.sampling_mode(common::HEAVY_SAMPLING);
        for &label in labels {
            let (act, wdt, _) = split_label(label);
            let mut keys = vec![("weight".to_owned(), vec![out_dim, in_dim])];
            if bias {
                keys.push(("bias".to_owned(), vec![out_dim]));
            }
            let linear = Linear::load(&weights(&keys, wdt, wdt), in_dim, out_dim, bias).unwrap();
            let x = normal(&[1, tokens, in_dim], 1.0, act, 11);
            common::fresh_cache();
            group.bench_function(label, |b| b.iter(|| linear.forward(&x).unwrap().eval().unwrap()));
        }
        group.finish();
    }
}

criterion_group! { name = benches; config = common::heavy(); targets = bench }
criterion_main!(benches);
