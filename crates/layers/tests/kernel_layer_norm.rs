//! `kernels::layer_norm` against MLX's `fast.layer_norm` ([`layers::LayerNorm`], and
//! `tensor::fast::layer_norm` without parameters) on the stock CPU build, bit for bit:
//! float32 activations with bf16 parameters (gemma4's unified embedder), all-bf16, all-float32,
//! with and without weight and bias, random shapes and special values.

extern crate gemma_vision_layers as layers;

use half::bf16;
use kernels::Float;
use kernels::layer_norm::{layer_norm, layer_norm_scalar};
use kernels::testing::{bits, cast, floats};
use layers::{Execution, LAYER_NORM_EPS, LayerNorm};
use proptest::prelude::*;
use tensor::{Array, SharedArray};

fn array<T: tensor::Element>(v: &[T], shape: &[i32]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

/// Activations `X`, parameters `P`, output `T` = their result type.
fn compare<X, P, T>(x: &[f32], weight: Option<&[f32]>, bias: Option<&[f32]>, eps: f32, dim: usize)
where
    X: Float + tensor::Element,
    P: Float + tensor::Element,
    T: Float + tensor::Element,
{
    let x: Vec<X> = cast(x);
    let (w, b): (Option<Vec<P>>, Option<Vec<P>>) = (weight.map(cast), bias.map(cast));
    let input = array(&x, &[(x.len() / dim) as i32, dim as i32]);
    let d = [dim as i32];
    let want: Vec<T> = match (&w, &b) {
        (Some(w), Some(b)) => {
            let shared = |v: &[P]| SharedArray::new(array(v, &d)).unwrap();
            LayerNorm::new(shared(w), shared(b), eps, Execution::Mlx).forward(&input).unwrap()
        }
        _ => {
            let (wa, ba) = (w.as_ref().map(|w| array(w, &d)), b.as_ref().map(|b| array(b, &d)));
            tensor::fast::layer_norm(&input, wa.as_ref(), ba.as_ref(), eps).unwrap()
        }
    }
    .to_vec()
    .unwrap();
    let to_out = |p: &Option<Vec<P>>| p.as_ref().map(|p| p.iter().map(|v| T::from_f32(v.to_f32())).collect::<Vec<T>>());
    let (wt, bt) = (to_out(&w), to_out(&b));
    let mut got = vec![T::default(); x.len()];
    layer_norm(&x, wt.as_deref(), bt.as_deref(), eps, dim, &mut got).unwrap();
    assert_eq!(bits(&got), bits(&want), "kernel vs MLX");
    let mut twin = vec![T::default(); x.len()];
    layer_norm_scalar(&x, wt.as_deref(), bt.as_deref(), eps, dim, &mut twin).unwrap();
    assert_eq!(bits(&twin), bits(&want), "twin vs MLX");
}

fn all_dtypes(x: &[f32], w: Option<&[f32]>, b: Option<&[f32]>, eps: f32, dim: usize) {
    compare::<f32, bf16, f32>(x, w, b, eps, dim);
    compare::<f32, f32, f32>(x, w, b, eps, dim);
    compare::<bf16, bf16, bf16>(x, w, b, eps, dim);
    // MLX's output type is the promotion of all three with a weight, `x`'s dtype without one
    // (a bias alone is cast to it).
    if w.is_some() {
        compare::<bf16, f32, f32>(x, w, b, eps, dim);
    } else {
        compare::<bf16, f32, bf16>(x, w, b, eps, dim);
    }
}

fn ramp(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| ((i + seed) * 7919 % 4093) as f32 / 512.0 - 3.0).collect()
}

#[test]
fn unified_embedder_shapes_match_mlx() {
    // The embedder's first norm over 6912 pixel values and its later ones over the hidden size.
    for (rows, dim) in [(97, 6912), (601, 768)] {
        let x = ramp(rows * dim, dim);
        let w: Vec<f32> = ramp(dim, 1).iter().map(|v| v / 4.0 + 1.0).collect();
        let b: Vec<f32> = ramp(dim, 2).iter().map(|v| v / 16.0).collect();
        compare::<f32, bf16, f32>(&x, Some(&w), Some(&b), LAYER_NORM_EPS, dim);
        compare::<f32, f32, f32>(&x, Some(&w), Some(&b), LAYER_NORM_EPS, dim);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_rows_match_mlx(
        rows in 1usize..40,
        dim in prop_oneof![1usize..24, Just(64), Just(768)],
        seed in prop::collection::vec(floats((8, -4.0..4.0), vec![0.0, -0.0, f32::NAN, f32::INFINITY,
            f32::NEG_INFINITY, f32::from_bits(1), 1e-30, -3e19, f32::MAX]), 97),
        (weighted, biased) in (any::<bool>(), any::<bool>()),
        eps in prop::sample::select(vec![1e-5f32, 1e-6, 0.0]),
    ) {
        let x: Vec<f32> = (0..rows * dim).map(|i| seed[(i * 31 + i / 5) % seed.len()] + (i % 3) as f32).collect();
        let w: Vec<f32> = (0..dim).map(|i| seed[(i * 17 + 3) % seed.len()]).collect();
        let b: Vec<f32> = (0..dim).map(|i| seed[(i * 11 + 7) % seed.len()]).collect();
        all_dtypes(&x, weighted.then_some(&w[..]), biased.then_some(&b[..]), eps, dim);
    }
}
