//! `kernels::attention` against MLX's `fast::scaled_dot_product_attention` (its CPU fallback),
//! bit for bit: as mlx-vlm calls it (token-major projections transposed to `[B, H, L, D]`,
//! the head dimension zero-padded to 64/80/128 by `ensure_fused_sdpa`) and unpadded; float32
//! and bf16, with and without an additive mask (broadcast over batch and heads or not),
//! grouped-query heads, batches, head dimensions 8, 64 and 72, NaN, ±inf, −0 and denormals in
//! the inputs.
//!
//! MLX's float32 matmuls must be the stock wheel's reference BLAS: build with `MLX_BLAS=none`
//! (`MLX_BLAS=none cargo test -p gemma-vision-layers --test kernel_attention`). Float32 NaN outputs are
//! compared as NaN; bf16 outputs bit for bit.

extern crate gemma_vision_layers as layers;

mod common;

use common::require_reference_blas;

use half::bf16;
use kernels::Float;
use kernels::attention::{AttentionShape, attention};
use kernels::testing::attention::{Case, cases};
use kernels::testing::{lcg_values, same_as_mlx, scaled_floats, tower_mask};
use layers::ensure_fused_sdpa;
use proptest::prelude::*;
use tensor::fast::{AttentionMask, scaled_dot_product_attention};
use tensor::{Array, Element};

trait Scalar: Float + Element {}
impl Scalar for f32 {}
impl Scalar for bf16 {}

fn value() -> impl Strategy<Value = f32> + Clone {
    scaled_floats(
        (24, -3.0..3.0),
        (2, -30..12),
        vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, 1e-40, -4e-39, 1e30],
    )
}

/// Attentions as mlx-vlm runs them: grouped heads, lengths past the key block, the head
/// dimensions of the towers and an odd one.
fn case() -> impl Strategy<Value = Case> {
    let length = || prop_oneof![4 => 1usize..40, 1 => 250usize..300];
    let dims = (1usize..3, 1usize..4, 1usize..3, length(), length(), prop::sample::select(vec![8usize, 64, 72]));
    cases(dims, value(), 6, 0.05..0.5)
}

/// A token-major `[B, L, H, D]` array viewed as `[B, H, L, D]`, as mlx-vlm transposes it.
fn heads_first<T: Scalar>(values: &[T], batch: usize, len: usize, heads: usize, dim: usize) -> Array {
    let shape = [batch as i32, len as i32, heads as i32, dim as i32];
    Array::from_slice(values, &shape).unwrap().transpose(&[0, 2, 1, 3]).unwrap()
}

/// MLX's attention (through `ensure_fused_sdpa`, and unpadded) against `kernels::attention`.
fn check<T: Scalar>(case: &Case) -> Result<(), TestCaseError> {
    let AttentionShape { batch, query_heads, kv_heads, queries, keys, head_dim } = case.shape;
    let typed = case.typed::<T>();
    let mut ours = vec![T::from_f32(7.0); typed.q.len()];
    attention(typed.inputs(), &mut ours).unwrap();

    let qa = heads_first(&typed.q, batch, queries, query_heads, head_dim);
    let ka = heads_first(&typed.k, batch, keys, kv_heads, head_dim);
    let va = heads_first(&typed.v, batch, keys, kv_heads, head_dim);
    let mask_array = typed
        .mask
        .as_ref()
        .map(|(mb, mh, data)| Array::from_slice(data, &[*mb as i32, *mh as i32, queries as i32, keys as i32]).unwrap());
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
                same_as_mlx(x, y),
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
    let mask = real.iter().flat_map(|&r| tower_mask::<f32>(len, r)).collect();
    let n = batch * len * heads * dim;
    let case = Case {
        shape: AttentionShape { batch, query_heads: heads, kv_heads: heads, queries: len, keys: len, head_dim: dim },
        q: lcg_values(n, 1, 2.0),
        k: lcg_values(n, 2, 2.0),
        v: lcg_values(n, 3, 2.0),
        scale: 1.0,
        mask: Some((batch, 1, mask)),
    };
    require_reference_blas();
    check::<f32>(&case).unwrap();
    check::<bf16>(&case).unwrap();
}
