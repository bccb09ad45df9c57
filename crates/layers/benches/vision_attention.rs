//! `VisionAttention` at E2B shapes: `[1, 2520, 768]`, 12 heads of 64, clipped projections, 2-D
//! RoPE and the additive mask (120 padding tokens). The RoPE tables are built inside the timed
//! region, as the reference builds them on every call.

extern crate gemma_vision_layers as layers;
mod common;

use common::{HIDDEN, TOKENS, additive_mask, attention_keys, block_config, grid_positions, normal, split_label};
use criterion::{Criterion, criterion_group, criterion_main};
use layers::VisionAttention;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("vision_attention");
    group.sampling_mode(common::HEAVY_SAMPLING);
    let config = block_config();
    let positions = grid_positions();
    for label in ["bfloat16", "float32"] {
        let (act, wdt, clip) = split_label(label);
        let attention = VisionAttention::load(&common::weights(&attention_keys(""), wdt, clip), &config).unwrap();
        let x = normal(&[1, TOKENS, HIDDEN], 1.0, act, 22);
        let mask = additive_mask(TOKENS, 120, act);
        common::fresh_cache();
        group.bench_function(label, |b| {
            b.iter(|| {
                let rope = config.rope_tables(&positions, act).unwrap();
                attention.forward(&x, &rope, Some(&mask)).unwrap().eval().unwrap()
            })
        });
    }
    group.finish();
}

criterion_group! { name = benches; config = common::heavy(); targets = bench }
criterion_main!(benches);
