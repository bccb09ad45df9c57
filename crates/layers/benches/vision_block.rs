//! `VisionBlock` (one gemma4 encoder layer) at E2B shapes: `[1, 2520, 768]`, clipped
//! projections, 2-D RoPE and the (all-zero, image path) additive mask. The RoPE tables are built
//! inside the timed region, as the reference builds them on every call.

extern crate gemma_vision_layers as layers;
mod common;

use common::{
    HIDDEN, TOKENS, additive_mask, attention_keys, block_config, grid_positions, mlp_keys, normal, split_label,
};
use criterion::{Criterion, criterion_group, criterion_main};
use layers::VisionBlock;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("vision_block");
    group.sampling_mode(common::HEAVY_SAMPLING);
    let config = block_config();
    let positions = grid_positions();
    let mut keys = attention_keys("self_attn.");
    keys.extend(mlp_keys("mlp."));
    for norm in
        ["input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"]
    {
        keys.push((format!("{norm}.weight"), vec![HIDDEN]));
    }
    for label in ["bfloat16", "float32"] {
        let (act, wdt, clip) = split_label(label);
        let block = VisionBlock::load(&common::weights(&keys, wdt, clip), &config).unwrap();
        let x = normal(&[1, TOKENS, HIDDEN], 1.0, act, 23);
        let mask = additive_mask(TOKENS, 0, act);
        common::fresh_cache();
        group.bench_function(label, |b| {
            b.iter(|| {
                let rope = config.rope_tables(&positions, act).unwrap();
                block.forward(&x, &rope, Some(&mask)).unwrap().eval().unwrap()
            })
        });
    }
    group.finish();
}

criterion_group! { name = benches; config = common::heavy(); targets = bench }
criterion_main!(benches);
