//! `ensure_fused_sdpa` with the encoder's additive mask: `[1, 12, 2520, 64]` (E2B), a head
//! dimension of 72 padded to 80 (`[1, 16, 630, 72]`), and grouped-query attention (12 query
//! heads over 4 key/value heads, 630 tokens).

extern crate gemma_vision_layers as layers;
mod common;

use common::{HEAD_DIM, HEADS, TOKENS, additive_mask, normal, split_label};
use criterion::{Criterion, criterion_group, criterion_main};
use layers::ensure_fused_sdpa;

fn bench(c: &mut Criterion) {
    let cases =
        [("sdpa", HEADS, HEADS, TOKENS, HEAD_DIM), ("sdpa_hd72", 16, 16, 630, 72), ("sdpa_gqa", 12, 4, 630, 64)];
    for (case, heads, kv_heads, tokens, head_dim) in cases {
        let mut group = c.benchmark_group(case);
        group.sampling_mode(common::HEAVY_SAMPLING);
        for label in ["bfloat16", "float32"] {
            let (act, _, _) = split_label(label);
            let q = normal(&[1, heads, tokens, head_dim], 0.5, act, 19);
            let k = normal(&[1, kv_heads, tokens, head_dim], 0.5, act, 20);
            let v = normal(&[1, kv_heads, tokens, head_dim], 1.0, act, 21);
            let mask = additive_mask(tokens, (tokens / 20).max(1), act);
            common::fresh_cache();
            group.bench_function(label, |b| {
                b.iter(|| ensure_fused_sdpa(&q, &k, &v, 1.0, Some(&mask)).unwrap().eval().unwrap())
            });
        }
        group.finish();
    }
}

criterion_group! { name = benches; config = common::heavy(); targets = bench }
criterion_main!(benches);
