//! Fused `LayerNorm` at the unified embedder's shape: `[1, 280, 6912]`, eps 1e-5.

extern crate gemma_vision_layers as layers;
mod common;

use common::{EMBED_TOKENS, PATCH_DIM, normal, split_label, weights};
use criterion::{Criterion, criterion_group, criterion_main};
use layers::{LAYER_NORM_EPS, LayerNorm};
use tensor::Dtype;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("layer_norm");
    for label in ["bfloat16", "float32", "float32+bf16w"] {
        let (act, wdt, _) = split_label(label);
        let keys = [("weight".to_owned(), vec![PATCH_DIM]), ("bias".to_owned(), vec![PATCH_DIM])];
        let norm = LayerNorm::load(&weights(&keys, wdt, wdt), PATCH_DIM, LAYER_NORM_EPS).unwrap();
        let x = normal(&[1, EMBED_TOKENS, PATCH_DIM], 0.25, Dtype::F32, 15).add(0.5).unwrap().astype(act).unwrap();
        x.eval().unwrap();
        common::fresh_cache();
        group.bench_function(label, |b| b.iter(|| norm.forward(&x).unwrap().eval().unwrap()));
    }
    group.finish();
}

criterion_group! { name = benches; config = common::light(); targets = bench }
criterion_main!(benches);
