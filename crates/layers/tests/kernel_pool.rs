//! `kernels::pool` against the reference pooler's averaging, bit for bit: bf16 and float32
//! features, an e2b grid, random slot maps (with tokens in no slot) and non-finite features,
//! whose zero products reach the other slots.
//!
//! The reference computes `einsum("bLl,bLd->bld", W, h)` (`W` the one-hot weights `/ k²`),
//! which stock MLX runs as a float32 matmul through the reference BLAS: per output, a sum over
//! the tokens in order of rounded products. This build of MLX links BLIS for float32 matmuls
//! (mlx-ffi's build script), whose sums run in another order, so the tests compare with the
//! same sum written as MLX ops that do not go through a BLAS, `sum(W[..., None] * h[:, :, None],
//! 1)` (MLX's reductions are sequential), and with values stock mlx 0.32.2 computed with the
//! einsum itself (`stock_einsum_values`).

use half::bf16;
use kernels::Float;
use kernels::pool::{pool, pool_scalar};
use proptest::prelude::*;
use tensor::{Array, Dtype};

fn bits<T: Float>(v: &[T]) -> Vec<u32> {
    v.iter().map(|x| if x.to_f32().is_nan() { u32::MAX } else { x.to_f32().to_bits() }).collect()
}

/// The reference's sum without a BLAS: `W = (idx[..., None] == arange(length)).astype(f32) /
/// (k*k)`, then `sum(W[..., None] * h.astype(f32)[:, :, None, :], 1).astype(h.dtype)`.
fn mlx_pool<T: Float + tensor::Element>(
    h: &[T],
    slots: &[usize],
    batch: usize,
    dim: usize,
    length: usize,
    k: i32,
) -> Vec<T> {
    let tokens = slots.len() / batch;
    let idx: Vec<i32> = slots.iter().map(|&s| s as i32).collect();
    let idx = Array::from_slice(&idx, &[batch as i32, tokens as i32]).unwrap();
    let range = Array::arange(0.0, length as f64, 1.0, Dtype::I32).unwrap();
    let w = idx.expand_dims(-1).unwrap().eq(&range).unwrap().astype(Dtype::F32).unwrap().div(k * k).unwrap();
    let features = Array::from_slice(h, &[batch as i32, tokens as i32, dim as i32]).unwrap();
    let products =
        w.expand_dims(-1).unwrap().mul(features.astype(Dtype::F32).unwrap().expand_dims(2).unwrap()).unwrap();
    let pooled = products.sum(&[1], false).unwrap().astype(features.dtype()).unwrap();
    pooled.to_vec().unwrap()
}

fn compare<T: Float + tensor::Element>(h: &[f32], slots: &[usize], batch: usize, dim: usize, length: usize, k: i32) {
    let h: Vec<T> = h.iter().map(|&v| T::from_f32(v)).collect();
    let want = mlx_pool(&h, slots, batch, dim, length, k);
    let weight = 1.0 / (k * k) as f32;
    let mut got = vec![T::default(); batch * length * dim];
    pool(&h, slots, dim, length, weight, &mut got).unwrap();
    assert_eq!(bits(&got), bits(&want), "kernel vs MLX");
    let mut twin = vec![T::default(); got.len()];
    pool_scalar(&h, slots, dim, length, weight, &mut twin).unwrap();
    assert_eq!(bits(&twin), bits(&want), "twin vs MLX");
}

/// Slots of a `rows × cols` grid pooled `k × k`, as the reference indexes them.
fn grid_slots(rows: usize, cols: usize, k: usize) -> Vec<usize> {
    (0..rows * cols).map(|n| (n % cols) / k + (cols / k) * ((n / cols) / k)).collect()
}

/// `pooled` of a 6 × 6 grid pooled 3 × 3, 8 features, by stock mlx 0.32.2 (Python, CPU):
/// `einsum("bLl,bLd->bld", W, h)` with `h[i] = (i·7919 mod 4093) / 256 − 8`, as float32 bits,
/// and with `h` in bf16 then `.astype(bf16)`, as bf16 bits.
#[test]
fn stock_einsum_values() {
    const F32: [u32; 32] = [
        0x3f8cc71c, 0x3feaaaac, 0x3f4a5556, 0xbe815554, 0x3ef638e3, 0xbf0fe38f, 0x3e2f8e38, 0xbf5f1c72, 0xbf565555,
        0xbff0aaaa, 0xbf92c71c, 0xbed38e3a, 0x3ea40002, 0x3f86e38e, 0x3fe4c71e, 0x40215556, 0x3e0b8e38, 0xbf681c72,
        0xbe315550, 0xbf9baaac, 0xc0109555, 0xbfc3471c, 0xbf4ac719, 0xbd6ffff0, 0x3fe0471e, 0x401f1556, 0x3fb8aaaa,
        0x3eccaaae, 0x3f910e39, 0x3db8e394, 0x3f52e38d, 0xbe6071c8,
    ];
    const BF16: [u16; 32] = [
        0x3f8c, 0x3feb, 0x3f4b, 0xbe82, 0x3ef5, 0xbf0f, 0x3e31, 0xbf5f, 0xbf56, 0xbff0, 0xbf93, 0xbed2, 0x3ea5, 0x3f87,
        0x3fe4, 0x4021, 0x3e0c, 0xbf69, 0xbe32, 0xbf9b, 0xc011, 0xbfc3, 0xbf4b, 0xbd62, 0x3fe0, 0x401f, 0x3fb8, 0x3ecb,
        0x3f91, 0x3dbc, 0x3f53, 0xbe63,
    ];
    let (slots, dim, length) = (grid_slots(6, 6, 3), 8, 4);
    let h: Vec<f32> = (0..36 * dim).map(|i| ((i * 7919) % 4093) as f32 / 256.0 - 8.0).collect();
    let mut out = vec![0f32; length * dim];
    pool(&h, &slots, dim, length, 1.0 / 9.0, &mut out).unwrap();
    assert_eq!(out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), F32);
    let hb: Vec<bf16> = h.iter().map(|&v| bf16::from_f32(v)).collect();
    let mut out = vec![bf16::ZERO; length * dim];
    pool(&hb, &slots, dim, length, 1.0 / 9.0, &mut out).unwrap();
    assert_eq!(out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), BF16);
    // One token [-1, 2, -3] in slot 1 of 2: the empty slot 0 sums 0·h = −0, +0, −0 from +0.
    let mut out = [0f32; 6];
    pool(&[-1f32, 2.0, -3.0], &[1], 3, 2, 1.0 / 9.0, &mut out).unwrap();
    assert_eq!(out.map(f32::to_bits), [0, 0, 0, 3185806905, 1046711865, 3198855851]);
}

#[test]
fn an_e2b_grid_matches_mlx() {
    // 42 × 57 patches pooled 3 × 3 into 14 × 19 = 266 slots (a few features: the reference sum
    // materialises [tokens, slots, features] products).
    let (rows, cols, k) = (42usize, 57usize, 3usize);
    let slots = grid_slots(rows, cols, k);
    let length = (rows / k) * (cols / k);
    let dim = 8;
    let h: Vec<f32> = (0..rows * cols * dim).map(|i| ((i * 7919) % 4093) as f32 / 256.0 - 8.0).collect();
    compare::<bf16>(&h, &slots, 1, dim, length, k as i32);
    compare::<f32>(&h, &slots, 1, dim, length, k as i32);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_slot_maps_match_mlx(
        batch in 1usize..3,
        // At least two tokens: MLX's `sum` over an axis of one element is a copy, not a sum
        // from +0 (it keeps a −0 product, which the einsum's BLAS sum turns into +0).
        tokens in 2usize..40,
        dim in prop::sample::select(vec![1usize, 5, 8, 17, 64]),
        length in 1usize..10,
        k in 1i32..4,
        slot_seed in prop::collection::vec(0usize..12, 41),
        values in prop::collection::vec(prop_oneof![
            12 => -8f32..8.0,
            1 => any::<u32>().prop_map(f32::from_bits),
            1 => prop::sample::select(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e-40, 3e38]),
        ], 97),
    ) {
        let slots: Vec<usize> = (0..batch * tokens).map(|i| slot_seed[i % slot_seed.len()]).collect();
        let h: Vec<f32> = (0..batch * tokens * dim).map(|i| values[(i * 7 + i / 3) % values.len()]).collect();
        compare::<bf16>(&h, &slots, batch, dim, length, k);
        compare::<f32>(&h, &slots, batch, dim, length, k);
    }
}
