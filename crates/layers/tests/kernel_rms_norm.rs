//! `kernels::rms_norm` against MLX's `fast.rms_norm` ([`layers::RmsNorm`]) on the stock CPU
//! build, bit for bit: bf16 and float32 activations, bf16 and float32 weights (MLX promotes to
//! their result type), no weight, random shapes and special values (NaN, ±∞, −0, denormals,
//! huge and tiny magnitudes), and a whole e2b block norm.

extern crate gemma_vision_layers as layers;

use half::bf16;
use kernels::Float;
use kernels::rms_norm::{rms_norm, rms_norm_scalar};
use kernels::testing::{bits, cast, floats, norm_specials};
use layers::{Execution, RmsNorm};
use proptest::prelude::*;
use tensor::{Array, Dtype, SharedArray};

/// MLX's `fast.rms_norm(x, weight, eps)` of `x` `[rows, dim]` as dtype `X`, weight as `W`,
/// read back as `T` (the result type).
fn mlx<X, W, T>(x: &[X], weight: Option<&[W]>, eps: f32, dim: usize) -> Vec<T>
where
    X: Float + tensor::Element,
    W: Float + tensor::Element,
    T: Float + tensor::Element,
{
    let rows = (x.len() / dim) as i32;
    let input = Array::from_slice(x, &[rows, dim as i32]).unwrap();
    let norm = match weight {
        Some(w) => {
            RmsNorm::new(SharedArray::new(Array::from_slice(w, &[dim as i32]).unwrap()).unwrap(), eps, Execution::Mlx)
        }
        None => RmsNorm::no_scale(eps, Execution::Mlx),
    };
    let out = norm.forward(&input).unwrap();
    assert_eq!(
        out.dtype(),
        if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() { Dtype::F32 } else { Dtype::Bf16 }
    );
    out.to_vec::<T>().unwrap()
}

/// Kernel (and twin) against MLX for activations `X`, weight `W`, output `T`.
fn compare<X, W, T>(x: &[f32], weight: Option<&[f32]>, eps: f32, dim: usize)
where
    X: Float + tensor::Element,
    W: Float + tensor::Element,
    T: Float + tensor::Element,
{
    let x: Vec<X> = cast(x);
    let w: Option<Vec<W>> = weight.map(cast);
    let want: Vec<T> = mlx(&x, w.as_deref(), eps, dim);
    let w_out: Option<Vec<T>> = w.as_ref().map(|w| w.iter().map(|v| T::from_f32(v.to_f32())).collect());
    let mut got = vec![T::default(); x.len()];
    rms_norm(&x, w_out.as_deref(), eps, dim, &mut got).unwrap();
    assert_eq!(bits(&got), bits(&want), "kernel vs MLX");
    let mut twin = vec![T::default(); x.len()];
    rms_norm_scalar(&x, w_out.as_deref(), eps, dim, &mut twin).unwrap();
    assert_eq!(bits(&twin), bits(&want), "twin vs MLX");
}

fn all_dtypes(x: &[f32], w: Option<&[f32]>, eps: f32, dim: usize) {
    compare::<bf16, bf16, bf16>(x, w, eps, dim);
    compare::<f32, f32, f32>(x, w, eps, dim);
    if w.is_some() {
        compare::<f32, bf16, f32>(x, w, eps, dim);
        compare::<bf16, f32, f32>(x, w, eps, dim);
    }
}

fn ramp(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| (((i + seed) * 7919 % 2039) as f32 / 255.0 - 4.0) * if i % 11 == 0 { 9.0 } else { 1.0 }).collect()
}

#[test]
fn an_e2b_block_norm_matches_mlx() {
    let (rows, dim) = (2394, 768);
    let x = ramp(rows * dim, 3);
    let w: Vec<f32> = ramp(dim, 5).iter().map(|v| v / 4.0 + 1.0).collect();
    all_dtypes(&x, Some(&w), 1e-6, dim);
    all_dtypes(&x, None, 1e-6, dim);
}

#[test]
fn special_values_match_mlx() {
    let dim = 12;
    let mut x = Vec::new();
    // One special value per row among ordinary ones, then rows of only specials.
    for s in norm_specials() {
        let mut row = ramp(dim, x.len());
        row[x.len() % dim] = s;
        x.extend(row);
    }
    x.extend(norm_specials());
    x.extend(norm_specials().iter().rev());
    let w = ramp(dim, 1);
    all_dtypes(&x, Some(&w), 1e-6, dim);
    all_dtypes(&x, None, 0.0, dim);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_rows_match_mlx(
        rows in 1usize..40,
        dim in prop_oneof![1usize..24, Just(64), Just(72), Just(768), Just(1152)],
        seed in prop::collection::vec(floats((8, -4.0..4.0), norm_specials()), 97),
        weights in prop::collection::vec(floats((8, -4.0..4.0), norm_specials()), 97),
        weighted in any::<bool>(),
        eps in prop::sample::select(vec![1e-6f32, 1e-5, 0.0, 1.0]),
    ) {
        let x: Vec<f32> = (0..rows * dim).map(|i| seed[(i * 31 + i / 5) % seed.len()]).collect();
        let w: Vec<f32> = (0..dim).map(|i| weights[i % weights.len()]).collect();
        all_dtypes(&x, weighted.then_some(&w[..]), eps, dim);
    }
}
