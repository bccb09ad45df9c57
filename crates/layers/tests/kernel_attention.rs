//! `kernels::attention` against MLX's `fast::scaled_dot_product_attention` (its CPU fallback),
//! bit for bit: as mlx-vlm calls it (token-major projections transposed to `[B, H, L, D]`,
//! the head dimension zero-padded to 64/80/128 by `ensure_fused_sdpa`) and unpadded; float32
//! and bf16, with and without an additive mask (broadcast over batch and heads or not),
//! grouped-query heads, batches, head dimensions 8, 64 and 72, NaN, ±inf, −0 and denormals in
//! the inputs.
//!
//! MLX's float32 matmuls must be the stock wheel's reference BLAS: build with `MLX_BLAS=none`
//! (`MLX_BLAS=none cargo test -p layers --test kernel_attention`). Float32 NaN outputs are
//! compared as NaN; bf16 outputs bit for bit.

mod common;

use common::require_reference_blas;

use half::bf16;
use kernels::Float;
use kernels::attention::{AttentionShape, MaskRef, attention};
use layers::ensure_fused_sdpa;
use proptest::prelude::*;
use tensor::fast::{AttentionMask, scaled_dot_product_attention};
use tensor::{Array, Element};

trait Scalar: Float + Element {}
impl Scalar for f32 {}
impl Scalar for bf16 {}

fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        24 => -3.0f32..3.0,
        2 => (-30i32..12, -1.0f32..1.0).prop_map(|(e, m)| m * 2f32.powi(e)),
        1 => prop::sample::select(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, 1e-40, -4e-39, 1e30]),
    ]
}

/// One attention as mlx-vlm runs it: shape, token-major inputs, scale, optional mask with
/// its batch and head extents (1 or full).
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
    let length = || prop_oneof![4 => 1usize..40, 1 => 250usize..300];
    let dims = (1usize..3, 1usize..4, 1usize..3, length(), length(), prop::sample::select(vec![8usize, 64, 72]));
    (dims, any::<(bool, bool, bool)>())
        .prop_flat_map(|((batch, kv_heads, group, queries, keys, head_dim), (masked, mask_batch, mask_heads))| {
            let query_heads = kv_heads * group;
            let shape = AttentionShape { batch, query_heads, kv_heads, queries, keys, head_dim };
            let (mb, mh) = (if mask_batch { batch } else { 1 }, if mask_heads { query_heads } else { 1 });
            let mask = prop::collection::vec(
                prop_oneof![6 => Just(0.0f32), 2 => Just(-1e4f32), 1 => value(), 1 => Just(f32::NEG_INFINITY)],
                mb * mh * queries * keys,
            )
            .prop_map(move |values| (mb, mh, values));
            (
                Just(shape),
                prop::collection::vec(value(), batch * queries * query_heads * head_dim),
                prop::collection::vec(value(), batch * keys * kv_heads * head_dim),
                prop::collection::vec(value(), batch * keys * kv_heads * head_dim),
                prop_oneof![Just(1.0f32), 0.05f32..0.5],
                if masked { prop::option::of(mask).boxed() } else { Just(None).boxed() },
            )
        })
        .prop_map(|(shape, q, k, v, scale, mask)| Case { shape, q, k, v, scale, mask })
}

/// A token-major `[B, L, H, D]` array viewed as `[B, H, L, D]`, as mlx-vlm transposes it.
fn heads_first<T: Scalar>(values: &[T], batch: usize, len: usize, heads: usize, dim: usize) -> Array {
    let shape = [batch as i32, len as i32, heads as i32, dim as i32];
    Array::from_slice(values, &shape).unwrap().transpose(&[0, 2, 1, 3]).unwrap()
}

fn same<T: Float>(ours: T, mlx: T) -> bool {
    let (x, y) = (ours.to_f32(), mlx.to_f32());
    match T::DTYPE {
        kernels::DType::F32 => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        kernels::DType::Bf16 => x.to_bits() == y.to_bits(),
    }
}

/// MLX's attention (through `ensure_fused_sdpa`, and unpadded) against `kernels::attention`.
fn check<T: Scalar>(case: &Case) -> Result<(), TestCaseError> {
    let AttentionShape { batch, query_heads, kv_heads, queries, keys, head_dim } = case.shape;
    let convert = |values: &[f32]| values.iter().map(|&x| T::from_f32(x)).collect::<Vec<T>>();
    let (q, k, v) = (convert(&case.q), convert(&case.k), convert(&case.v));
    let mask_values = case.mask.as_ref().map(|(_, _, values)| convert(values));
    let mask = case.mask.as_ref().zip(mask_values.as_deref()).map(|((mb, mh, _), data)| (*mb, *mh, data));

    let mut ours = vec![T::from_f32(7.0); q.len()];
    let mask_ref = mask.map(|(mb, mh, data)| MaskRef::new(data, mb, mh));
    attention(case.shape, &q, &k, &v, case.scale, mask_ref, &mut ours).unwrap();

    let qa = heads_first(&q, batch, queries, query_heads, head_dim);
    let ka = heads_first(&k, batch, keys, kv_heads, head_dim);
    let va = heads_first(&v, batch, keys, kv_heads, head_dim);
    let mask_array = mask
        .map(|(mb, mh, data)| Array::from_slice(data, &[mb as i32, mh as i32, queries as i32, keys as i32]).unwrap());
    let padded = ensure_fused_sdpa(&qa, &ka, &va, case.scale, mask_array.as_ref()).unwrap();
    let direct = scaled_dot_product_attention(
        &qa,
        &ka,
        &va,
        case.scale,
        mask_array.as_ref().map_or(AttentionMask::None, AttentionMask::Array),
    )
    .unwrap();
    for (name, result) in [("ensure_fused_sdpa", padded), ("scaled_dot_product_attention", direct)] {
        let expected = result.transpose(&[0, 2, 1, 3]).unwrap().contiguous().unwrap().to_vec::<T>().unwrap();
        prop_assert_eq!(expected.len(), ours.len());
        for (i, (&x, &y)) in ours.iter().zip(&expected).enumerate() {
            let token = i / (query_heads * head_dim);
            prop_assert!(
                same(x, y),
                "{}: out[{}] (batch {}, query {}, head {}, dim {}): ours {:?} ({:#x}), MLX {:?} ({:#x})",
                name,
                i,
                token / queries,
                token % queries,
                i / head_dim % query_heads,
                i % head_dim,
                x,
                x.to_f32().to_bits(),
                y,
                y.to_f32().to_bits()
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn float32_attention_matches_mlx(case in case()) {
        require_reference_blas();
        check::<f32>(&case)?;
    }

    #[test]
    fn bf16_attention_matches_mlx(case in case()) {
        check::<bf16>(&case)?;
    }
}

/// gemma4's tower mask: `[B, 1, L, L]`, 0 between real patches and `-1e4` (bf16 `-9984`) to and
/// from padding, at a length past the key block of the product with `v`.
#[test]
fn the_tower_padding_mask_matches_mlx() {
    let (batch, len, heads, dim) = (2usize, 300usize, 2usize, 72usize);
    let real = [len, 211];
    let mut mask = Vec::new();
    for &r in &real {
        for i in 0..len {
            mask.extend((0..len).map(|j| if i < r && j < r { 0.0f32 } else { -1e4 }));
        }
    }
    let values = |n: usize, seed: u64| -> Vec<f32> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((state >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * 2.0
            })
            .collect()
    };
    let n = batch * len * heads * dim;
    let case = Case {
        shape: AttentionShape { batch, query_heads: heads, kv_heads: heads, queries: len, keys: len, head_dim: dim },
        q: values(n, 1),
        k: values(n, 2),
        v: values(n, 3),
        scale: 1.0,
        mask: Some((batch, 1, mask)),
    };
    require_reference_blas();
    check::<f32>(&case).unwrap();
    check::<bf16>(&case).unwrap();
}
