//! The fast path against the scalar twin, and the twin's own properties.

use super::*;
use half::bf16;
use proptest::prelude::*;

fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        16 => -3.0f32..3.0,
        2 => (-20i32..20, -1.0f32..1.0).prop_map(|(e, m)| m * 2f32.powi(e)),
        1 => prop::sample::select(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, 1e-40, -1e30, 1e30]),
    ]
}

/// One attention: its shape, inputs and mask (with its broadcast extents).
#[derive(Debug, Clone)]
struct Case {
    shape: AttentionShape,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    scale: f32,
    mask: Option<(usize, usize, Vec<f32>)>,
}

fn case() -> impl Strategy<Value = Case> {
    let dims =
        (1usize..3, 1usize..3, 1usize..3, 1usize..40, 0usize..45, prop_oneof![3 => 1usize..20, 1 => 60usize..80]);
    (dims, any::<(bool, bool, bool)>())
        .prop_flat_map(|((batch, kv_heads, group, queries, keys, head_dim), (masked, mask_batch, mask_heads))| {
            let shape = AttentionShape { batch, query_heads: kv_heads * group, kv_heads, queries, keys, head_dim };
            let (mb, mh) = (if mask_batch { batch } else { 1 }, if mask_heads { kv_heads * group } else { 1 });
            let mask = prop::collection::vec(
                prop_oneof![4 => Just(0.0f32), 2 => Just(-1e4f32), 1 => value(), 1 => Just(f32::NEG_INFINITY)],
                mb * mh * queries * keys,
            )
            .prop_map(move |values| (mb, mh, values));
            (
                Just(shape),
                prop::collection::vec(value(), batch * queries * kv_heads * group * head_dim),
                prop::collection::vec(value(), batch * keys * kv_heads * head_dim),
                prop::collection::vec(value(), batch * keys * kv_heads * head_dim),
                prop_oneof![Just(1.0f32), 0.01f32..0.5],
                if masked { prop::option::of(mask).boxed() } else { Just(None).boxed() },
            )
        })
        .prop_map(|(shape, q, k, v, scale, mask)| Case { shape, q, k, v, scale, mask })
}

fn same<T: Float>(x: T, y: T) -> bool {
    let (x, y) = (x.to_f32(), y.to_f32());
    (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
}

fn check<T: Float>(case: &Case) -> Result<(), TestCaseError> {
    let convert = |values: &[f32]| values.iter().map(|&x| T::from_f32(x)).collect::<Vec<T>>();
    let (q, k, v) = (convert(&case.q), convert(&case.k), convert(&case.v));
    let mask_values = case.mask.as_ref().map(|(_, _, values)| convert(values));
    let mask = case.mask.as_ref().zip(mask_values.as_deref()).map(|((mb, mh, _), data)| MaskRef::new(data, *mb, *mh));
    let mut expected = vec![T::default(); q.len()];
    reference(case.shape, &q, &k, &v, case.scale, mask, &mut expected).unwrap();
    for kernel in MicroKernel::available() {
        let mut out = vec![T::from_f32(7.0); q.len()];
        attention_with(kernel, case.shape, &q, &k, &v, case.scale, mask, &mut out).unwrap();
        for (i, (&x, &y)) in out.iter().zip(&expected).enumerate() {
            prop_assert!(same(x, y), "{:?}: out[{}] = {:?}, reference {:?}", kernel, i, x, y);
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
    attention(shape, &q, &k, &v, 0.7, None, &mut out).unwrap();
    let wide = AttentionShape { head_dim: padded_dim, ..shape };
    let mut out_wide = vec![0.0; q.len() / shape.head_dim * padded_dim];
    attention(wide, &pad(&q), &pad(&k), &pad(&v), 0.7, None, &mut out_wide).unwrap();
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
    let mut out = vec![0.0f32; 24];
    assert!(attention(shape, &x[..24], &x[..16], &x[..16], 1.0, None, &mut out).is_err());
    let shape = AttentionShape { query_heads: 2, ..shape };
    let mut out = vec![0.0f32; 16];
    assert!(attention(shape, &x[..16], &x[..16], &x[..16], 1.0, None, &mut out).is_ok());
    assert!(attention(shape, &x[..15], &x[..16], &x[..16], 1.0, None, &mut out).is_err());
    let mask = MaskRef::new(&x[..8], 1, 2);
    assert!(attention(shape, &x[..16], &x[..16], &x[..16], 1.0, Some(mask), &mut out).is_ok());
    let mask = MaskRef::new(&x[..12], 1, 3);
    assert!(attention(shape, &x[..16], &x[..16], &x[..16], 1.0, Some(mask), &mut out).is_err());
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
        pool.install(|| attention(shape, &q, &k, &v, 0.3, Some(MaskRef::new(&mask, 1, 1)), &mut out).unwrap());
        out.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(5));
}

/// Products that overflow: `−∞ + ∞` is NaN when each product is rounded first (MLX), while an
/// FMA would carry `−∞` through; the bf16 path must not take FMA here.
#[test]
fn overflowing_products_keep_the_separate_rounding() {
    let shape = AttentionShape { batch: 1, query_heads: 1, kv_heads: 1, queries: 1, keys: 2, head_dim: 2 };
    let b = |x: f32| crate::bf16_from_f32(x);
    let q = [b(1e30), b(1e30)];
    let k = [b(-1e30), b(1e30), b(1.0), b(1.0)];
    let v = [b(1.0), b(2.0), b(3.0), b(4.0)];
    let mut expected = [bf16::ZERO; 2];
    reference(shape, &q, &k, &v, 1.0, None, &mut expected).unwrap();
    assert!(expected.iter().all(|x| x.to_f32().is_nan()));
    for kernel in MicroKernel::available() {
        let mut out = [bf16::ZERO; 2];
        attention_with(kernel, shape, &q, &k, &v, 1.0, None, &mut out).unwrap();
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
