//! RoPE at E2B shapes: `[1, 2520, 12, 64]` rotated by a 42 × 60 grid (2-D) or by 0..2520 (1-D).
//!
//! `rope_2d` and `rope_1d` build the tables and apply them, as one call of the reference's
//! `apply_multidimensional_rope` does; `rope_2d_cached` applies tables built beforehand, as the
//! encoder does for every layer after the first.

extern crate gemma_vision_layers as layers;
mod common;

use common::{HEAD_DIM, HEADS, ROPE_THETA, TOKENS, grid_positions, normal, split_label};
use criterion::{Criterion, criterion_group, criterion_main};
use layers::RopeTables;
use tensor::Array;

fn bench(c: &mut Criterion) {
    let line: Vec<i32> = (0..TOKENS).collect();
    let cases = [
        ("rope_2d", grid_positions(), false),
        ("rope_2d_cached", grid_positions(), true),
        ("rope_1d", Array::from_slice(&line, &[1, TOKENS]).unwrap(), false),
    ];
    for (case, positions, cached) in cases {
        let mut group = c.benchmark_group(case);
        for label in ["bfloat16", "float32"] {
            let (act, _, _) = split_label(label);
            let x = normal(&[1, TOKENS, HEADS, HEAD_DIM], 1.0, act, 18);
            if cached {
                let tables = RopeTables::new(&positions, HEAD_DIM, ROPE_THETA, act).unwrap();
                for d in 0..2 {
                    Array::eval_all(&[tables.cos(d).unwrap(), tables.sin(d).unwrap()]).unwrap();
                }
                common::fresh_cache();
                group.bench_function(label, |b| b.iter(|| tables.apply(&x).unwrap().eval().unwrap()));
            } else {
                common::fresh_cache();
                group.bench_function(label, |b| {
                    b.iter(|| {
                        let tables = RopeTables::new(&positions, HEAD_DIM, ROPE_THETA, x.dtype()).unwrap();
                        tables.apply(&x).unwrap().eval().unwrap()
                    })
                });
            }
        }
        group.finish();
    }
}

criterion_group! { name = benches; config = common::light(); targets = bench }
criterion_main!(benches);
