//! `kernels::elementwise` against MLX's `add`, `multiply`, `multiply` by a weak scalar and
//! `clip` (stock CPU build), bit for bit, in bf16 and float32, on random slices with NaN
//! payloads, ±∞, −0, denormals and huge magnitudes.

use half::bf16;
use kernels::Float;
use kernels::elementwise::{add, add_in_place, clip_in_place, multiply, multiply_in_place, scale};
use kernels::testing::{bits, floats};
use proptest::prelude::*;
use tensor::Array;

fn raw<T: Float>(v: &[T]) -> Vec<u32> {
    v.iter().map(|x| x.to_f32().to_bits()).collect()
}

fn array<T: tensor::Element>(v: &[T]) -> Array {
    Array::from_slice(v, &[v.len() as i32]).unwrap()
}

/// `T` from float32 bits: bf16 by truncation, so NaN payloads survive into bf16 inputs.
fn to<T: Float>(v: f32) -> T {
    T::from_f32(f32::from_bits(v.to_bits() & if T::DTYPE == kernels::ElementType::Bf16 { 0xFFFF_0000 } else { !0 }))
}

fn compare<T: Float + tensor::Element>(a: &[f32], b: &[f32], s: f32, low: f32, high: f32) {
    let a: Vec<T> = a.iter().map(|&v| to(v)).collect();
    let b: Vec<T> = b.iter().map(|&v| to(v)).collect();
    let (xa, xb) = (array(&a), array(&b));
    let mut out = vec![T::default(); a.len()];

    let want: Vec<T> = xa.add(&xb).unwrap().to_vec().unwrap();
    add(&a, &b, &mut out).unwrap();
    assert_eq!(bits(&out), bits(&want), "add");
    let mut acc = a.clone();
    add_in_place(&mut acc, &b).unwrap();
    assert_eq!(bits(&acc), bits(&want), "add_in_place");

    let want: Vec<T> = xa.mul(&xb).unwrap().to_vec().unwrap();
    multiply(&a, &b, &mut out).unwrap();
    assert_eq!(bits(&out), bits(&want), "multiply");
    let mut acc = a.clone();
    multiply_in_place(&mut acc, &b).unwrap();
    assert_eq!(bits(&acc), bits(&want), "multiply_in_place");

    // A weak Python scalar: rounded to T through float32, as MLX makes it.
    let want: Vec<T> = xa.mul(f64::from(s)).unwrap().to_vec().unwrap();
    let mut scaled = a.clone();
    scale(&mut scaled, T::from_f32(s)).unwrap();
    assert_eq!(bits(&scaled), bits(&want), "scale");

    let (lo, hi) = (T::from_f32(low), T::from_f32(high));
    for (l, h) in [(Some(lo), Some(hi)), (Some(lo), None), (None, Some(hi))] {
        let bound = |v: Option<T>| v.map(|v| array(&[v]));
        let (bl, bh) = (bound(l), bound(h));
        let want: Vec<T> = xa.clip(bl.as_ref(), bh.as_ref()).unwrap().to_vec().unwrap();
        let mut clipped = a.clone();
        clip_in_place(&mut clipped, l, h).unwrap();
        assert_eq!(raw(&clipped), raw(&want), "clip keeps MLX's exact bits ({l:?}, {h:?})");
    }
}

fn value() -> impl Strategy<Value = f32> {
    floats(
        (8, -8.0..8.0),
        vec![
            0.0,
            -0.0,
            f32::NAN,
            f32::from_bits(0xFFA1_2345),
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::from_bits(1),
            1e-30,
            3e38,
            -3e38,
            f32::MAX,
        ],
    )
}

#[test]
fn e2b_residual_add_matches_mlx() {
    let n: usize = 2394 * 768;
    let a: Vec<f32> = (0..n).map(|i| ((i * 7919) % 4093) as f32 / 64.0 - 32.0).collect();
    let b: Vec<f32> = (0..n).map(|i| ((i * 104_729) % 2039) as f32 / 256.0 - 4.0).collect();
    compare::<bf16>(&a, &b, 27.712_812, -4.0, 4.0);
    compare::<f32>(&a, &b, 27.712_812, -4.0, 4.0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_slices_match_mlx(
        pairs in prop::collection::vec((value(), value()), 1..3000),
        s in value(),
        (low, high) in (-4f32..0.0, 0f32..4.0),
    ) {
        let (a, b): (Vec<f32>, Vec<f32>) = pairs.into_iter().unzip();
        compare::<bf16>(&a, &b, s, low, high);
        compare::<f32>(&a, &b, s, low, high);
    }
}
