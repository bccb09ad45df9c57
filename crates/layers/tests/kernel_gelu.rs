//! `kernels::gelu` against [`layers::gelu_approx`] (mlx's `nn.gelu_approx` compiled by MLX as
//! the reference compiles it, stock CPU build) times `up`, bit for bit, the kernels' float32
//! cubic term this process's ([`layers::gelu_cubic_term`]): the GELU of every bf16 value, the
//! gated product in bf16 and float32 on a float32 sweep and random slices with special values.

extern crate gemma_vision_layers as layers;

use half::bf16;
use kernels::Float;
use kernels::gelu::{gelu_approx, gelu_approx_mul, gelu_approx_mul_scalar, gelu_approx_scalar};
use kernels::testing::{bits, cast, floats};
use proptest::prelude::*;
use tensor::Array;

fn array<T: tensor::Element>(v: &[T]) -> Array {
    Array::from_slice(v, &[v.len() as i32]).unwrap()
}

fn mlx_gated<T: Float + tensor::Element>(gate: &[T], up: &[T]) -> Vec<T> {
    layers::gelu_approx(&array(gate)).unwrap().mul(array(up)).unwrap().to_vec().unwrap()
}

fn compare<T: Float + tensor::Element>(gate: &[f32], up: &[f32]) {
    let (gate, up): (Vec<T>, Vec<T>) = (cast(gate), cast(up));
    let want = mlx_gated(&gate, &up);
    let mut got = vec![T::default(); gate.len()];
    gelu_approx_mul(layers::gelu_cubic_term(), &gate, &up, &mut got).unwrap();
    assert_eq!(bits(&got), bits(&want), "kernel vs MLX");
    let mut twin = vec![T::default(); gate.len()];
    gelu_approx_mul_scalar(layers::gelu_cubic_term(), &gate, &up, &mut twin).unwrap();
    assert_eq!(bits(&twin), bits(&want), "twin vs MLX");
}

#[test]
fn the_gelu_of_every_bf16_matches_mlx() {
    let xs: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
    let want: Vec<bf16> = layers::gelu_approx(&array(&xs)).unwrap().to_vec().unwrap();
    let mut got = vec![bf16::ZERO; xs.len()];
    gelu_approx(layers::gelu_cubic_term(), &xs, &mut got).unwrap();
    for ((x, g), w) in xs.iter().zip(&got).zip(&want) {
        assert_eq!(g.to_bits(), w.to_bits(), "gelu(bf16 {:#06x})", x.to_bits());
        assert_eq!(gelu_approx_scalar(layers::gelu_cubic_term(), *x).to_bits(), w.to_bits());
    }
}

#[test]
fn a_float32_sweep_matches_mlx() {
    // Every 4099th bit pattern (all magnitudes, NaNs, infinities) and a dense range.
    let mut gate: Vec<f32> = (0..u32::MAX / 4099).map(|i| f32::from_bits(i * 4099)).collect();
    gate.extend((0..200_000).map(|i| i as f32 / 10_000.0 - 10.0));
    let up: Vec<f32> = (0..gate.len()).map(|i| (i % 17) as f32 / 4.0 - 2.0).collect();
    compare::<f32>(&gate, &up);
    let xs: Vec<f32> = gate.clone();
    let want: Vec<f32> = layers::gelu_approx(&array(&xs)).unwrap().to_vec().unwrap();
    let mut got = vec![0f32; xs.len()];
    gelu_approx(layers::gelu_cubic_term(), &xs, &mut got).unwrap();
    assert_eq!(bits(&got), bits(&want), "gelu_approx float32");
}

#[test]
fn an_e2b_mlp_activation_matches_mlx() {
    let n: usize = 2394 * 3072;
    let gate: Vec<f32> = (0..n).map(|i| ((i * 7919) % 8191) as f32 / 1024.0 - 4.0).collect();
    let up: Vec<f32> = (0..n).map(|i| ((i * 104_729) % 4093) as f32 / 1024.0 - 2.0).collect();
    compare::<bf16>(&gate, &up);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_slices_match_mlx(
        pairs in prop::collection::vec((
            floats((8, -8.0..8.0), vec![0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY,
                f32::from_bits(1), 1e-30, 3e19, -3e19, f32::MAX]),
            prop_oneof![4 => -4f32..4.0, 1 => any::<u32>().prop_map(f32::from_bits)],
        ), 1..3000),
    ) {
        let (gate, up): (Vec<f32>, Vec<f32>) = pairs.into_iter().unzip();
        compare::<bf16>(&gate, &up);
        compare::<f32>(&gate, &up);
    }
}
