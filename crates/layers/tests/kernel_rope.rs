//! `kernels::rope` against [`layers::RopeTables::apply`] (mlx-vlm's
//! `apply_multidimensional_rope` with MLX ops, stock CPU build), bit for bit: 2-D positions
//! (two partitions) and the 1-D fallback, bf16 and float32, random shapes and values with
//! NaN, ±∞, −0, denormals and huge magnitudes.

extern crate gemma_vision_layers as layers;

use half::bf16;
use kernels::Float;
use kernels::rope::{RopePartition, rope, rope_in_place, rope_scalar};
use kernels::testing::{bits, floats};
use proptest::prelude::*;
use tensor::{Array, Dtype};

/// Positions `[batch, len, 2]` of a `cols`-wide grid (`(col, row)`), or `[batch, len]`.
fn positions(batch: usize, len: usize, cols: usize, one_dimensional: bool) -> Array {
    if one_dimensional {
        let ids: Vec<i32> = (0..batch * len).map(|n| ((n * 5) % 37) as i32).collect();
        return Array::from_slice(&ids, &[batch as i32, len as i32]).unwrap();
    }
    let ids: Vec<i32> = (0..batch * len).flat_map(|n| [((n % len) % cols) as i32, ((n % len) / cols) as i32]).collect();
    Array::from_slice(&ids, &[batch as i32, len as i32, 2]).unwrap()
}

/// The kernel (three entry points) and its twin against MLX for `x` `[batch, len, heads, head_dim]`.
fn compare<T: Float + tensor::Element>(
    x: &[f32],
    (batch, len, heads, head_dim): (usize, usize, usize, usize),
    cols: usize,
    one_dimensional: bool,
    dtype: Dtype,
) {
    let x: Vec<T> = x.iter().map(|&v| T::from_f32(v)).collect();
    let tables =
        layers::RopeTables::new(&positions(batch, len, cols, one_dimensional), head_dim as i32, 100.0, dtype).unwrap();
    let input = Array::from_slice(&x, &[batch as i32, len as i32, heads as i32, head_dim as i32]).unwrap();
    let want: Vec<T> = tables.apply(&input).unwrap().to_vec().unwrap();

    let partitions = if one_dimensional { 1 } else { 2 };
    let host: Vec<(Vec<T>, Vec<T>)> = (0..partitions)
        .map(|d| (tables.cos(d).unwrap().to_vec().unwrap(), tables.sin(d).unwrap().to_vec().unwrap()))
        .collect();
    let c = head_dim / partitions;
    let parts: Vec<RopePartition<T>> = host.iter().map(|(cos, sin)| RopePartition::new(cos, sin, c).unwrap()).collect();

    let mut got = vec![T::default(); x.len()];
    rope(&x, heads, head_dim, &parts, &mut got).unwrap();
    assert_eq!(bits(&got), bits(&want), "rope vs MLX");
    let mut in_place = x.clone();
    rope_in_place(&mut in_place, heads, head_dim, &parts).unwrap();
    assert_eq!(bits(&in_place), bits(&want), "rope_in_place vs MLX");
    let mut twin = vec![T::default(); x.len()];
    rope_scalar(&x, heads, head_dim, &parts, &mut twin).unwrap();
    assert_eq!(bits(&twin), bits(&want), "twin vs MLX");
}

fn both(x: &[f32], shape: (usize, usize, usize, usize), cols: usize, one_dimensional: bool) {
    compare::<bf16>(x, shape, cols, one_dimensional, Dtype::Bf16);
    compare::<f32>(x, shape, cols, one_dimensional, Dtype::F32);
}

#[test]
fn e2b_queries_match_mlx() {
    let shape = (1, 2394, 12, 64);
    let n: usize = 2394 * 12 * 64;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 4093) as f32 / 512.0 - 4.0).collect();
    both(&x, shape, 63, false);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_heads_match_mlx(
        batch in 1usize..3,
        len in 1usize..40,
        cols in 1usize..9,
        heads in 1usize..4,
        head_dim in prop::sample::select(vec![4usize, 8, 16, 20, 64, 72]),
        one_dimensional in any::<bool>(),
        values in prop::collection::vec(floats((8, -8.0..8.0),
            vec![0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-40, 3e38]), 83),
    ) {
        let n = batch * len * heads * head_dim;
        let x: Vec<f32> = (0..n).map(|i| values[(i * 13 + i / 3) % values.len()]).collect();
        both(&x, (batch, len, heads, head_dim), cols, one_dimensional);
    }
}
