//! [`Arithmetic::HostFloat32`] computes the reference's function in float32: every host piece
//! (attention, gated GELU, fused head norms) and a whole block agree with the reference
//! computation to float32 rounding, on inputs with masks, grouped-query heads and head
//! dimensions the fused kernel pads.

use layers::{
    Arithmetic, AttentionKernel, Error, GegluMlp, HostAttention, MemoryStore, RmsNorm, VisionBlock, VisionBlockConfig,
    Weights, ensure_fused_sdpa,
};
use std::sync::Arc;
use tensor::{Array, Dtype, SharedArray};

/// Deterministic pseudo-random values in [-1, 1) (a 64-bit LCG), scaled.
fn random(shape: &[i32], seed: u64, scale: f32) -> Array {
    let n: i32 = shape.iter().product();
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let values: Vec<f32> = (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 23) as f32 - 1.0) * scale
        })
        .collect();
    Array::from_slice(&values, shape).unwrap()
}

fn host(a: &Array) -> Vec<f32> {
    a.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap()
}

/// Largest |a − b| relative to the largest |b|.
fn relative_error(a: &Array, b: &Array) -> f32 {
    assert_eq!(a.shape(), b.shape());
    let (a, b) = (host(a), host(b));
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs())).max(f32::MIN_POSITIVE);
    a.iter().zip(&b).fold(0f32, |m, (x, y)| m.max((x - y).abs())) / scale
}

/// An additive `[B, 1, L, L]` mask hiding the last `padded[b]` positions of each batch row
/// from and to the others, as gemma4's tower builds it.
fn padding_mask(len: i32, padded: &[i32]) -> Array {
    let mut values = Vec::new();
    for &p in padded {
        for i in 0..len {
            for j in 0..len {
                let real = |t: i32| t < len - p;
                values.push(if real(i) && real(j) { 0.0f32 } else { -1e4 });
            }
        }
    }
    Array::from_slice(&values, &[padded.len() as i32, 1, len, len]).unwrap()
}

#[test]
fn host_attention_matches_the_fused_kernel() {
    // (batch, query heads, kv heads, length, head dim): plain, grouped-query, padded head dims.
    for (b, hq, hkv, l, d) in [(1, 4, 4, 37, 64), (2, 6, 2, 29, 16), (2, 4, 1, 50, 72), (1, 2, 2, 1, 8)] {
        let q = random(&[b, hq, l, d], 1, 2.0);
        let k = random(&[b, hkv, l, d], 2, 2.0);
        let v = random(&[b, hkv, l, d], 3, 1.0);
        let padded: Vec<i32> = (0..b).map(|i| (i * l / 3).min(l - 1)).collect();
        let mask = padding_mask(l, &padded);
        for (scale, mask) in [(1.0, None), (0.125, Some(&mask))] {
            let expected = ensure_fused_sdpa(&q, &k, &v, scale, mask).unwrap();
            let got = HostAttention.attend(&q, &k, &v, scale, mask).unwrap();
            assert_eq!(got.dtype(), Dtype::F32);
            let error = relative_error(&got, &expected);
            // Scale 1 with |q|, |k| ~ 2 gives logits up to ~30: a float32 dot product of 64 terms
            // summed in another order moves them by ~1e-5 absolute, and the softmax carries that
            // into the probabilities as a relative error.
            assert!(error < 1e-5, "{:?}: relative error {error}", (b, hq, hkv, l, d, scale));
        }
    }
}

#[test]
fn host_attention_converts_other_dtypes_in_and_out() {
    let q = random(&[1, 2, 9, 8], 4, 1.0).astype(Dtype::Bf16).unwrap();
    let k = random(&[1, 2, 9, 8], 5, 1.0).astype(Dtype::Bf16).unwrap();
    let v = random(&[1, 2, 9, 8], 6, 1.0).astype(Dtype::Bf16).unwrap();
    let got = HostAttention.attend(&q, &k, &v, 1.0, None).unwrap();
    assert_eq!(got.dtype(), Dtype::Bf16);
    let f32s = |x: &Array| x.astype(Dtype::F32).unwrap();
    let expected = ensure_fused_sdpa(&f32s(&q), &f32s(&k), &f32s(&v), 1.0, None).unwrap();
    assert!(relative_error(&got, &expected) < 8e-3);
}

#[test]
fn host_attention_refuses_inconsistent_shapes() {
    let q = random(&[1, 4, 5, 8], 1, 1.0);
    let kv = random(&[1, 3, 5, 8], 2, 1.0);
    let cases = [
        (q.clone(), kv.clone(), kv.clone(), None, "do not form grouped-query attention"),
        (q.reshape(&[4, 5, 8]).unwrap(), kv.clone(), kv.clone(), None, "must be [B, H, L, D]"),
        (q.clone(), q.clone(), q.clone(), Some(random(&[1, 1, 5, 4], 3, 1.0)), "does not broadcast"),
    ];
    for (q, k, v, mask, message) in cases {
        match HostAttention.attend(&q, &k, &v, 1.0, mask.as_ref()) {
            Err(Error::Input { block: "host attention", what }) => assert!(what.contains(message), "{what}"),
            other => panic!("expected an input error containing {message:?}, got {other:?}"),
        }
    }
}

fn block_config() -> VisionBlockConfig {
    VisionBlockConfig {
        hidden_size: 48,
        intermediate_size: 96,
        num_heads: 4,
        num_kv_heads: 2,
        head_dim: 12,
        rms_norm_eps: 1e-6,
        rope_theta: 100.0,
        clipped_linears: true,
    }
}

/// Seeded weights for one block of `config` (clipped projections, bounds wide enough to clip
/// only the tails).
fn block_weights(config: &VisionBlockConfig) -> Weights {
    let (h, i) = (config.hidden_size, config.intermediate_size);
    let (q, kv) = (config.num_heads * config.head_dim, config.num_kv_heads * config.head_dim);
    let projections = [
        ("self_attn.q_proj", q, h),
        ("self_attn.k_proj", kv, h),
        ("self_attn.v_proj", kv, h),
        ("self_attn.o_proj", h, q),
        ("mlp.gate_proj", i, h),
        ("mlp.up_proj", i, h),
        ("mlp.down_proj", h, i),
    ];
    let mut store = MemoryStore::new();
    for (seed, (name, out, inp)) in projections.into_iter().enumerate() {
        let std = 1.0 / (inp as f32).sqrt();
        store.insert(format!("{name}.linear.weight"), random(&[out, inp], seed as u64 + 10, std * 1.7)).unwrap();
        for (bound, value) in [("input_min", -3.0f32), ("input_max", 3.0), ("output_min", -2.5), ("output_max", 2.5)] {
            store.insert(format!("{name}.{bound}"), Array::scalar(value).unwrap()).unwrap();
        }
    }
    for (seed, name) in ["self_attn.q_norm", "self_attn.k_norm"].into_iter().enumerate() {
        let weight = random(&[config.head_dim], seed as u64 + 30, 0.5).add(1.0).unwrap();
        store.insert(format!("{name}.weight"), weight).unwrap();
    }
    let norms =
        ["input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"];
    for (seed, name) in norms.into_iter().enumerate() {
        let weight = random(&[h], seed as u64 + 40, 0.5).add(1.0).unwrap();
        store.insert(format!("{name}.weight"), weight).unwrap();
    }
    Weights::new(Arc::new(store))
}

#[test]
fn a_host_float32_block_computes_the_reference_block() {
    let config = block_config();
    let reference = VisionBlock::load(&block_weights(&config), &config).unwrap();
    let fast = reference.clone().with_arithmetic(Arithmetic::HostFloat32);
    assert!(format!("{:?}", fast.self_attn().kernel()).contains("HostAttention"));
    let (rows, cols) = (5, 7);
    let ids: Vec<i32> = (0..2 * rows * cols).flat_map(|n| [n % cols, (n / cols) % rows]).collect();
    let positions = Array::from_slice(&ids, &[2, rows * cols, 2]).unwrap();
    let rope = config.rope_tables(&positions, Dtype::F32).unwrap();
    let x = random(&[2, rows * cols, config.hidden_size], 7, 3.0);
    let mask = padding_mask(rows * cols, &[0, 6]);
    for mask in [None, Some(&mask)] {
        let expected = reference.forward(&x, &rope, mask).unwrap();
        let got = fast.forward(&x, &rope, mask).unwrap();
        let error = relative_error(&got, &expected);
        assert!(error < 1e-5, "relative error {error}");
        assert_ne!(host(&got), host(&x), "the block changed its input");
    }
    // Back to the reference arithmetic: the reference's bits again.
    let back = fast.with_arithmetic(Arithmetic::Reference);
    let bits = |a: &Array| a.with_bytes(<[u8]>::to_vec).unwrap();
    assert_eq!(bits(&back.forward(&x, &rope, None).unwrap()), bits(&reference.forward(&x, &rope, None).unwrap()));
}

#[test]
fn the_host_gated_gelu_needs_float32() {
    let config = block_config();
    let weights = block_weights(&config).pp("mlp");
    let mlp = GegluMlp::load(&weights, config.hidden_size, config.intermediate_size, true).unwrap();
    let fast = mlp.clone().with_arithmetic(Arithmetic::HostFloat32);
    let x = random(&[3, config.hidden_size], 8, 4.0);
    let error = relative_error(&fast.forward(&x).unwrap(), &mlp.forward(&x).unwrap());
    assert!(error < 1e-5, "relative error {error}");
    let bf16 = block_weights(&config).with_compute_dtype(Some(Dtype::Bf16)).pp("mlp");
    let bf16 = GegluMlp::load(&bf16, config.hidden_size, config.intermediate_size, true).unwrap();
    match bf16.with_arithmetic(Arithmetic::HostFloat32).forward(&x.astype(Dtype::Bf16).unwrap()) {
        Err(Error::Input { block: "host GELU", what }) => assert!(what.contains("must be float32"), "{what}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_host_rms_norm_matches_the_fused_one_and_needs_float32() {
    let weight = random(&[40], 9, 1.5);
    for norm in [RmsNorm::new(SharedArray::new(weight.clone()).unwrap(), 1e-6), RmsNorm::no_scale(1e-5)] {
        let fast = norm.clone().with_arithmetic(Arithmetic::HostFloat32);
        // A transposed (strided) input, a row of zeros (the eps alone), and a single row.
        let x = random(&[40, 2, 9], 10, 5.0).transpose(&[1, 2, 0]).unwrap();
        let zeros = Array::zeros(&[1, 40], Dtype::F32).unwrap();
        for input in [&x, &zeros, &random(&[40], 11, 0.1)] {
            let error = relative_error(&fast.forward(input).unwrap(), &norm.forward(input).unwrap());
            assert!(error < 1e-6, "{:?}: relative error {error}", input.shape());
        }
        match fast.forward(&x.astype(Dtype::Bf16).unwrap()) {
            Err(Error::Input { block: "host RMS norm", what }) => assert!(what.contains("must be float32"), "{what}"),
            other => panic!("{other:?}"),
        }
    }
    let wrong_width = RmsNorm::new(SharedArray::new(weight).unwrap(), 1e-6).with_arithmetic(Arithmetic::HostFloat32);
    assert!(matches!(wrong_width.forward(&random(&[3, 39], 12, 1.0)), Err(Error::Input { .. })));
}
