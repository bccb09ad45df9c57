//! The fast path against the scalar twin, and the twin's own properties.

use super::*;
use crate::testing::attention::{Case, cases};
use crate::testing::{same_bits, scaled_floats};
use half::bf16;
use proptest::prelude::*;

fn value() -> impl Strategy<Value = f32> + Clone {
    scaled_floats(
        (16, -3.0..3.0),
        (2, -20..20),
        vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, 1e-40, -1e30, 1e30],
    )
}

fn case() -> impl Strategy<Value = Case> {
    // Some blocks of queries span two tasks (`QUERY_PANELS · NR` queries each).
    let queries = prop_oneof![3 => 1usize..40, 1 => 60usize..80];
    let dims = (1usize..3, 1usize..3, 1usize..3, queries, 0usize..45, prop_oneof![3 => 1usize..20, 1 => 60usize..80]);
    cases(dims, value(), 4, 0.01..0.5)
}

fn check<T: Float>(case: &Case) -> Result<(), TestCaseError> {
    let typed = case.typed::<T>();
    let inputs = typed.inputs();
    let mut expected = vec![T::default(); typed.q.len()];
    reference(inputs, &mut expected).unwrap();
    for kernel in MicroKernel::available() {
        let mut out = vec![T::from_f32(7.0); typed.q.len()];
        attention_with(kernel, inputs, &mut out).unwrap();
        for (i, (&x, &y)) in out.iter().zip(&expected).enumerate() {
            prop_assert!(same_bits(x, y), "{:?}: out[{}] = {:?}, reference {:?}", kernel, i, x, y);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn float32_matches_the_reference(case in case()) {
        check::<f32>(&case)?;
    }

    #[test]
    fn bf16_matches_the_reference(case in case()) {
        check::<bf16>(&case)?;
    }
}

/// mlx-vlm zero-pads the head dimension before attention (64/80/128): exact zeros add `+0` to
/// every score's sum (which starts at `+0` and so is never `−0`) and only append outputs.
#[test]
fn zero_padding_the_head_dimension_changes_no_bit() {
    let shape = AttentionShape { batch: 1, query_heads: 2, kv_heads: 1, queries: 21, keys: 30, head_dim: 9 };
    let padded_dim = 16;
    let values = |n: usize, seed: u32| -> Vec<f32> {
        (0..n).map(|i| ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32 / 8e6 - 1.0).collect()
    };
    let pad = |x: &[f32]| -> Vec<f32> {
        x.chunks_exact(shape.head_dim)
            .flat_map(|row| row.iter().copied().chain(std::iter::repeat_n(0.0, padded_dim - shape.head_dim)))
            .collect()
    };
    let q = values(shape.queries * shape.query_heads * shape.head_dim, 1);
    let k = values(shape.keys * shape.head_dim, 2);
    let v = values(shape.keys * shape.head_dim, 3);
    let mut out = vec![0.0; q.len()];
    attention(AttentionInputs { shape, q: &q, k: &k, v: &v, scale: 0.7, mask: None }, &mut out).unwrap();
    let wide = AttentionShape { head_dim: padded_dim, ..shape };
    let mut out_wide = vec![0.0; q.len() / shape.head_dim * padded_dim];
    let (q, k, v) = (pad(&q), pad(&k), pad(&v));
    attention(AttentionInputs { shape: wide, q: &q, k: &k, v: &v, scale: 0.7, mask: None }, &mut out_wide).unwrap();
    let sliced: Vec<u32> =
        out_wide.chunks_exact(padded_dim).flat_map(|row| row[..shape.head_dim].iter().map(|x| x.to_bits())).collect();
    assert_eq!(sliced, out.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
}

#[test]
fn the_softmax_sums_in_key_order_and_keeps_nan() {
    let mut row = [1.0f32, f32::NAN, 2.0];
    reference::softmax_row(&mut row);
    assert!(row.iter().all(|x| x.is_nan()));
    let mut row = [f32::NEG_INFINITY; 3];
    reference::softmax_row(&mut row);
    assert!(row.iter().all(|x| x.is_nan()), "-inf − -inf is NaN");
    let mut row = [0.0f32, f32::NEG_INFINITY];
    reference::softmax_row(&mut row);
    assert_eq!(row, [1.0, 0.0]);
}

#[test]
fn bad_shapes_are_errors() {
    let shape = AttentionShape { batch: 1, query_heads: 3, kv_heads: 2, queries: 2, keys: 2, head_dim: 4 };
    let x = vec![0.0f32; 64];
    let inputs = AttentionInputs { shape, q: &x[..24], k: &x[..16], v: &x[..16], scale: 1.0, mask: None };
    assert!(attention(inputs, &mut [0.0f32; 24]).is_err());
    let shape = AttentionShape { query_heads: 2, ..shape };
    let inputs = AttentionInputs { shape, q: &x[..16], ..inputs };
    let mut out = vec![0.0f32; 16];
    assert!(attention(inputs, &mut out).is_ok());
    assert!(attention(AttentionInputs { q: &x[..15], ..inputs }, &mut out).is_err());
    assert!(attention(AttentionInputs { mask: Some(MaskRef::new(&x[..8], 1, 2)), ..inputs }, &mut out).is_ok());
    assert!(attention(AttentionInputs { mask: Some(MaskRef::new(&x[..12], 1, 3)), ..inputs }, &mut out).is_err());
}

#[test]
fn the_bits_do_not_depend_on_the_number_of_threads() {
    let shape = AttentionShape { batch: 2, query_heads: 4, kv_heads: 2, queries: 75, keys: 61, head_dim: 20 };
    let values = |n: usize, seed: usize| -> Vec<bf16> {
        (0..n).map(|i| crate::bf16_from_f32(((i * 7919 + seed) % 1013) as f32 / 300.0 - 1.7)).collect()
    };
    let q = values(shape.batch * shape.queries * shape.query_heads * shape.head_dim, 1);
    let k = values(shape.batch * shape.keys * shape.kv_heads * shape.head_dim, 2);
    let v = values(shape.batch * shape.keys * shape.kv_heads * shape.head_dim, 3);
    let mask = values(shape.queries * shape.keys, 4);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut out = vec![bf16::ZERO; q.len()];
        let mask = Some(MaskRef::new(&mask, 1, 1));
        pool.install(|| attention(AttentionInputs { shape, q: &q, k: &k, v: &v, scale: 0.3, mask }, &mut out).unwrap());
        out.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(5));
}

/// Products that overflow: `−∞ + ∞` is NaN when each product is rounded first (MLX on x86-64),
/// while an FMA carries `−∞` through (MLX on aarch64, whose rule the reference follows there);
/// the x86 bf16 path must not take FMA here.
#[test]
fn overflowing_products_keep_the_separate_rounding() {
    let shape = AttentionShape { batch: 1, query_heads: 1, kv_heads: 1, queries: 1, keys: 2, head_dim: 2 };
    let b = |x: f32| crate::bf16_from_f32(x);
    let q = [b(1e30), b(1e30)];
    let k = [b(-1e30), b(1e30), b(1.0), b(1.0)];
    let v = [b(1.0), b(2.0), b(3.0), b(4.0)];
    let inputs = AttentionInputs { shape, q: &q, k: &k, v: &v, scale: 1.0, mask: None };
    let mut expected = [bf16::ZERO; 2];
    reference(inputs, &mut expected).unwrap();
    if cfg!(not(target_arch = "aarch64")) {
        assert!(expected.iter().all(|x| x.to_f32().is_nan()));
    }
    for kernel in MicroKernel::available() {
        let mut out = [bf16::ZERO; 2];
        attention_with(kernel, inputs, &mut out).unwrap();
        assert_eq!(out.map(|x| x.to_bits()), expected.map(|x| x.to_bits()), "{kernel:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// A mask of `±0` (a single image's: no padding) is skipped; the scores it would have
    /// touched include zeros of both signs in `q` and `k`, so sums of zero products.
    #[test]
    fn a_mask_of_zeros_changes_no_bit(case in case(), signs in prop::collection::vec(any::<bool>(), 64)) {
        let zero_heavy = |values: &[f32]| -> Vec<f32> {
            values.iter().enumerate().map(|(i, &x)| if i % 3 == 0 { if signs[i % 64] { -0.0 } else { 0.0 } } else { x }).collect()
        };
        let shape = case.shape;
        let mask_len = shape.queries * shape.keys;
        let mask: Vec<f32> = (0..mask_len).map(|i| if signs[i % 64] { -0.0 } else { 0.0 }).collect();
        let case = Case { q: zero_heavy(&case.q), k: zero_heavy(&case.k), mask: Some((1, 1, mask)), ..case };
        check::<f32>(&case)?;
        check::<bf16>(&case)?;
    }
}

/// Scores whose maximum is a zero of either sign: raw sums below bf16's smallest subnormal
/// round to `−0` and `+0`, and the reference keeps the first of them as the maximum, where the
/// raw sums' maximum rounds to `+0` (the deferred step 1 must give the same bits).
#[test]
fn maxima_of_signed_zeros_keep_the_reference_bits() {
    let shape = AttentionShape { batch: 1, query_heads: 1, kv_heads: 1, queries: 3, keys: 4, head_dim: 1 };
    let q = [1e-20f32, -1e-20, 0.0];
    let k = [-1e-22f32, 1e-22, -1.0, 0.5];
    let v = [1.0f32, 2.0, 3.0, 4.0];
    let inputs = AttentionInputs { shape, q: &q, k: &k, v: &v, scale: 1.0, mask: None };
    let b = |x: &[f32]| x.iter().map(|&x| crate::bf16_from_f32(x)).collect::<Vec<bf16>>();
    let (qb, kb, vb) = (b(&q), b(&k), b(&v));
    let bf16_inputs = AttentionInputs { shape, q: &qb, k: &kb, v: &vb, scale: 1.0, mask: None };
    let mut expected = [0.0f32; 3];
    reference(inputs, &mut expected).unwrap();
    let mut expected_bf16 = [bf16::ZERO; 3];
    reference(bf16_inputs, &mut expected_bf16).unwrap();
    for kernel in MicroKernel::available() {
        let mut out = [0.0f32; 3];
        attention_with(kernel, inputs, &mut out).unwrap();
        assert_eq!(out.map(f32::to_bits), expected.map(f32::to_bits), "{kernel:?}");
        let mut out = [bf16::ZERO; 3];
        attention_with(kernel, bf16_inputs, &mut out).unwrap();
        assert_eq!(out.map(|x| x.to_bits()), expected_bf16.map(|x| x.to_bits()), "{kernel:?}");
    }
}
