//! `kernels::vision_rms_norm` against [`layers::VisionRmsNorm`] (mlx-vlm's op sequence with
//! MLX ops, stock CPU build), bit for bit: bf16 and float32 activations, bf16 and float32
//! weights, no weight, random shapes and special values; and `normalize_heads` against the
//! reference's norm followed by its RoPE.

extern crate gemma_vision_layers as layers;

use half::bf16;
use kernels::Float;
use kernels::rope::RopePartition;
use kernels::testing::{bits, cast, floats};
use kernels::vision_rms_norm::{normalize_heads, vision_rms_norm, vision_rms_norm_in_place, vision_rms_norm_scalar};
use layers::{Execution, VisionRmsNorm};
use proptest::prelude::*;
use tensor::{Array, Dtype, SharedArray};

const EPS: f32 = layers::VISION_RMS_NORM_EPS as f32;

fn reference_norm<W: Float + tensor::Element>(weight: Option<&[W]>) -> VisionRmsNorm {
    match weight {
        Some(w) => VisionRmsNorm::new(
            SharedArray::new(Array::from_slice(w, &[w.len() as i32]).unwrap()).unwrap(),
            Execution::Mlx,
        ),
        None => VisionRmsNorm::no_scale(Execution::Mlx),
    }
}

fn compare<T: Float + tensor::Element, W: Float + tensor::Element>(x: &[f32], weight: Option<&[f32]>, dim: usize) {
    let x: Vec<T> = cast(x);
    let w: Option<Vec<W>> = weight.map(cast);
    let input = Array::from_slice(&x, &[(x.len() / dim) as i32, dim as i32]).unwrap();
    let want: Vec<T> = reference_norm(w.as_deref()).forward(&input).unwrap().to_vec().unwrap();
    let mut got = vec![T::default(); x.len()];
    vision_rms_norm(&x, w.as_deref(), EPS, dim, &mut got).unwrap();
    assert_eq!(bits(&got), bits(&want), "kernel vs MLX");
    let mut in_place = x.clone();
    vision_rms_norm_in_place(&mut in_place, w.as_deref(), EPS, dim).unwrap();
    assert_eq!(bits(&in_place), bits(&want), "in place vs MLX");
    let mut twin = vec![T::default(); x.len()];
    vision_rms_norm_scalar(&x, w.as_deref(), EPS, dim, &mut twin).unwrap();
    assert_eq!(bits(&twin), bits(&want), "twin vs MLX");
}

fn all_dtypes(x: &[f32], w: Option<&[f32]>, dim: usize) {
    compare::<bf16, bf16>(x, w, dim);
    compare::<f32, f32>(x, w, dim);
    if w.is_some() {
        compare::<bf16, f32>(x, w, dim);
        compare::<f32, bf16>(x, w, dim);
    }
}

fn ramp(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i + seed) * 7919 % 4093) as f32 / 512.0 - 4.0).collect()
}

#[test]
fn e2b_heads_match_mlx() {
    let (rows, dim) = (2394 * 12, 64);
    let x = ramp(rows * dim, 1);
    let w: Vec<f32> = ramp(dim, 2).iter().map(|v| v / 8.0 + 1.0).collect();
    all_dtypes(&x, Some(&w), dim);
    all_dtypes(&x, None, dim);
}

/// Queries of a 2-D patch grid: the reference's `VisionRMSNorm` then
/// `apply_multidimensional_rope`, against the fused kernel.
fn fused_against_mlx<T: Float + tensor::Element>(
    x: &[f32],
    w: &[f32],
    tokens: usize,
    heads: usize,
    head_dim: usize,
    dtype: Dtype,
) {
    let x: Vec<T> = cast(x);
    let w: Vec<T> = cast(w);
    let cols = 7;
    let ids: Vec<i32> = (0..tokens).flat_map(|n| [(n % cols) as i32, (n / cols) as i32]).collect();
    let tables = layers::RopeTables::new(
        &Array::from_slice(&ids, &[1, tokens as i32, 2]).unwrap(),
        head_dim as i32,
        100.0,
        dtype,
    )
    .unwrap();
    let input = Array::from_slice(&x, &[1, tokens as i32, heads as i32, head_dim as i32]).unwrap();
    let normed = reference_norm(Some(&w)).forward(&input).unwrap();
    let want: Vec<T> = tables.apply(&normed).unwrap().to_vec().unwrap();

    let host: Vec<(Vec<T>, Vec<T>)> =
        (0..2).map(|d| (tables.cos(d).unwrap().to_vec().unwrap(), tables.sin(d).unwrap().to_vec().unwrap())).collect();
    let parts: Vec<RopePartition<T>> =
        host.iter().map(|(cos, sin)| RopePartition::new(cos, sin, head_dim / 2).unwrap()).collect();
    let mut got = x.clone();
    normalize_heads(&mut got, heads, head_dim, Some(&w), EPS, Some(&parts)).unwrap();
    assert_eq!(bits(&got), bits(&want), "normalize_heads vs MLX");
}

#[test]
fn fused_head_preparation_matches_mlx() {
    let (tokens, heads, head_dim) = (301, 12, 64);
    let x = ramp(tokens * heads * head_dim, 7);
    let w: Vec<f32> = ramp(head_dim, 3).iter().map(|v| v / 8.0 + 1.0).collect();
    fused_against_mlx::<bf16>(&x, &w, tokens, heads, head_dim, Dtype::Bf16);
    fused_against_mlx::<f32>(&x, &w, tokens, heads, head_dim, Dtype::F32);
    let (tokens, heads, head_dim) = (50, 3, 72);
    let x = ramp(tokens * heads * head_dim, 9);
    let w: Vec<f32> = ramp(head_dim, 4).iter().map(|v| v / 8.0 + 1.0).collect();
    fused_against_mlx::<bf16>(&x, &w, tokens, heads, head_dim, Dtype::Bf16);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_rows_match_mlx(
        rows in 1usize..40,
        dim in prop_oneof![1usize..24, Just(64), Just(72)],
        seed in prop::collection::vec(floats((8, -4.0..4.0), vec![0.0, -0.0, f32::NAN, f32::INFINITY,
            f32::NEG_INFINITY, f32::from_bits(1), 1e-20, 3e19, f32::MAX]), 97),
        weighted in any::<bool>(),
    ) {
        let x: Vec<f32> = (0..rows * dim).map(|i| seed[(i * 31 + i / 5) % seed.len()]).collect();
        let w: Vec<f32> = (0..dim).map(|i| seed[(i * 17 + 3) % seed.len()]).collect();
        all_dtypes(&x, weighted.then_some(&w[..]), dim);
    }
}
