//! Every block computed by the host kernels ([`Execution::Host`]) gives MLX's bits
//! ([`Execution::Mlx`]) on random weights and inputs: float32 and bf16, mixed dtypes, clipped
//! projections with bf16 and float32 bounds, biases, masks with padding, grouped-query
//! attention, head dimensions that MLX pads (72) or that are tiny (8), batches; and the host
//! path reports the kernels it ran.

use layers::{
    BlockNorms, ClipBounds, ClippableLinear, Execution, GegluMlp, LayerNorm, Linear, MemoryStore, RmsNorm,
    VisionAttention, VisionBlock, VisionBlockConfig, Weights, take_kernels_run,
};
use proptest::prelude::*;
use std::sync::Arc;
use tensor::{Array, Dtype, SharedArray};

/// Deterministic values of `shape` in about `[-scale, scale]`, with a few exact zeros, from `seed`.
fn random(shape: &[i32], seed: u64, scale: f32, dtype: Dtype) -> Array {
    let n: i32 = shape.iter().product();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let values: Vec<f32> = (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if i % 29 == 7 { 0.0 } else { ((state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale }
        })
        .collect();
    Array::from_slice(&values, shape).unwrap().astype(dtype).unwrap()
}

fn shared(a: Array) -> SharedArray {
    SharedArray::new(a).unwrap()
}

fn bits(a: &Array) -> Vec<u8> {
    a.with_bytes(<[u8]>::to_vec).unwrap()
}

fn scalar(value: f32, dtype: Dtype) -> SharedArray {
    shared(Array::scalar(value).unwrap().astype(dtype).unwrap())
}

/// Asserts that `mlx` and `host` computed the same array, bit for bit, and that the host path ran
/// every kernel in `kernels`.
fn assert_same(mlx: &Array, host: &Array, kernels: &[&str], what: &str) {
    assert_eq!((mlx.shape(), mlx.dtype()), (host.shape(), host.dtype()), "{what}");
    assert!(bits(mlx) == bits(host), "{what}: the host kernels' bits differ from MLX's");
    let ran = take_kernels_run();
    for kernel in kernels {
        assert!(ran.contains(kernel), "{what}: {kernel} did not run (ran: {ran:?})");
    }
}

fn dtype_strategy() -> impl Strategy<Value = Dtype> {
    prop::sample::select(vec![Dtype::F32, Dtype::Bf16])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn linear(m in 1i32..40, k in 1i32..70, n in 1i32..40, x_dtype in dtype_strategy(), w_dtype in dtype_strategy(),
              bias in any::<bool>(), seed in any::<u64>()) {
        let x = random(&[2, m, k], seed, 2.0, x_dtype);
        let weight = shared(random(&[n, k], seed ^ 1, 0.5, w_dtype));
        let bias = bias.then(|| shared(random(&[n], seed ^ 2, 1.0, w_dtype)));
        let linear = Linear::new(weight, bias);
        let host = linear.clone().with_execution(Execution::Host).forward(&x).unwrap();
        assert_same(&linear.forward(&x).unwrap(), &host, &["gemm"], "linear");
    }

    #[test]
    fn clippable_linear(m in 1i32..30, k in 1i32..50, n in 1i32..30, dtype in dtype_strategy(),
                        bound_dtype in dtype_strategy(), seed in any::<u64>()) {
        let x = random(&[1, m, k], seed, 3.0, dtype);
        let weight = shared(random(&[n, k], seed ^ 3, 0.5, dtype));
        let bounds = ClipBounds {
            input_min: scalar(-1.5, bound_dtype),
            input_max: scalar(1.25, bound_dtype),
            output_min: scalar(-0.75, bound_dtype),
            output_max: scalar(0.5, bound_dtype),
        };
        let layer = ClippableLinear::new(Linear::new(weight, None), Some(bounds));
        let host = layer.clone().with_execution(Execution::Host).forward(&x).unwrap();
        assert_same(&layer.forward(&x).unwrap(), &host, &["gemm"], "clippable linear");
    }

    #[test]
    fn rms_norm(rows in 1i32..40, dim in 1i32..100, dtype in dtype_strategy(), weighted in any::<bool>(),
                seed in any::<u64>()) {
        let x = random(&[rows, dim], seed, 4.0, dtype);
        let norm = if weighted { RmsNorm::new(shared(random(&[dim], seed ^ 4, 2.0, dtype)), 1e-6) } else { RmsNorm::no_scale(1e-6) };
        let host = norm.clone().with_execution(Execution::Host).forward(&x).unwrap();
        assert_same(&norm.forward(&x).unwrap(), &host, &["rms_norm"], "rms norm");
    }

    #[test]
    fn layer_norm(rows in 1i32..30, dim in 1i32..100, x_dtype in dtype_strategy(), w_dtype in dtype_strategy(),
                  seed in any::<u64>()) {
        let x = random(&[rows, dim], seed, 4.0, x_dtype);
        let norm = LayerNorm::new(shared(random(&[dim], seed ^ 5, 2.0, w_dtype)), shared(random(&[dim], seed ^ 6, 1.0, w_dtype)), 1e-5);
        let host = norm.clone().with_execution(Execution::Host).forward(&x).unwrap();
        assert_same(&norm.forward(&x).unwrap(), &host, &["layer_norm"], "layer norm");
    }

    #[test]
    fn geglu_mlp(tokens in 1i32..20, hidden in 1i32..24, intermediate in 1i32..48, dtype in dtype_strategy(),
                 seed in any::<u64>()) {
        let x = random(&[1, tokens, hidden], seed, 2.0, dtype);
        let proj = |out: i32, inp: i32, s: u64| ClippableLinear::new(Linear::new(shared(random(&[out, inp], s, 0.5, dtype)), None), None);
        let mlp = GegluMlp::new(proj(intermediate, hidden, seed ^ 7), proj(intermediate, hidden, seed ^ 8), proj(hidden, intermediate, seed ^ 9));
        let host = mlp.clone().with_execution(Execution::Host).forward(&x).unwrap();
        assert_same(&mlp.forward(&x).unwrap(), &host, &["gemm", "gelu"], "mlp");
    }
}

/// A block config with `heads` query heads over `kv_heads` key/value heads of `head_dim`.
fn block_config(heads: i32, kv_heads: i32, head_dim: i32, clipped: bool) -> VisionBlockConfig {
    VisionBlockConfig {
        hidden_size: 24,
        intermediate_size: 40,
        num_heads: heads,
        num_kv_heads: kv_heads,
        head_dim,
        rms_norm_eps: 1e-6,
        rope_theta: 100.0,
        clipped_linears: clipped,
    }
}

/// Random weights of one block of `config` in `dtype`, clip bounds in `bound_dtype`.
fn block_weights(config: &VisionBlockConfig, dtype: Dtype, bound_dtype: Dtype, seed: u64) -> Weights {
    let (d, i) = (config.hidden_size, config.intermediate_size);
    let (q, kv) = (config.num_heads * config.head_dim, config.num_kv_heads * config.head_dim);
    let mut tensors: Vec<(String, Array)> = Vec::new();
    let projections = [
        ("self_attn.q_proj", [q, d]),
        ("self_attn.k_proj", [kv, d]),
        ("self_attn.v_proj", [kv, d]),
        ("self_attn.o_proj", [d, q]),
        ("mlp.gate_proj", [i, d]),
        ("mlp.up_proj", [i, d]),
        ("mlp.down_proj", [d, i]),
    ];
    for (n, (name, shape)) in projections.iter().enumerate() {
        tensors.push((format!("{name}.linear.weight"), random(shape, seed + n as u64, 0.4, dtype)));
        if config.clipped_linears {
            for (bound, value) in [("input_min", -2.0), ("input_max", 2.5), ("output_min", -3.0), ("output_max", 1.5)] {
                tensors.push((
                    format!("{name}.{bound}"),
                    Array::scalar(value as f32).unwrap().astype(bound_dtype).unwrap(),
                ));
            }
        }
    }
    let hd = config.head_dim;
    tensors.push(("self_attn.q_norm.weight".into(), random(&[hd], seed + 20, 1.5, dtype)));
    tensors.push(("self_attn.k_norm.weight".into(), random(&[hd], seed + 21, 1.5, dtype)));
    for (n, norm) in
        ["input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"]
            .iter()
            .enumerate()
    {
        tensors.push((format!("{norm}.weight"), random(&[d], seed + 30 + n as u64, 1.5, dtype)));
    }
    let store = MemoryStore::from_arrays(tensors.iter().map(|(n, a)| (n.as_str(), a.clone()))).unwrap();
    Weights::new(Arc::new(store))
}

/// Row-major grid positions `[batch, rows · cols, 2]` (x = column, y = row), the last `padded`
/// tokens of each image `(-1, -1)`.
fn positions(batch: i32, rows: i32, cols: i32, padded: i32) -> Array {
    let mut ids = Vec::new();
    for _ in 0..batch {
        for n in 0..rows * cols {
            ids.extend(if n >= rows * cols - padded { [-1, -1] } else { [n % cols, n / cols] });
        }
    }
    Array::from_slice(&ids, &[batch, rows * cols, 2]).unwrap()
}

/// gemma4's additive mask `[B, 1, L, L]` in `dtype`: 0 between real tokens, -1e4 otherwise.
fn padding_mask(positions: &Array, dtype: Dtype) -> Array {
    let valid = positions.eq(-1).unwrap().all(&[-1], false).unwrap().logical_not().unwrap();
    let pairs = valid.expand_dims(1).unwrap().mul(valid.expand_dims(2).unwrap()).unwrap();
    let zero = Array::scalar(0.0f32).unwrap().astype(dtype).unwrap();
    let fill = Array::scalar(-1e4f32).unwrap().astype(dtype).unwrap();
    pairs.select(&zero, &fill).unwrap().expand_dims(1).unwrap()
}

#[test]
fn vision_attention_and_block_with_masks_gqa_and_padded_head_dims() {
    let cases = [
        // (heads, kv heads, head dim, clipped, batch, rows, cols, padded tokens, dtype, bound dtype)
        (4, 2, 8, true, 2, 3, 5, 4, Dtype::Bf16, Dtype::Bf16),
        (2, 2, 72, false, 1, 4, 4, 0, Dtype::Bf16, Dtype::Bf16),
        (3, 1, 16, true, 1, 5, 7, 6, Dtype::F32, Dtype::F32),
        (2, 2, 64, true, 1, 6, 6, 3, Dtype::Bf16, Dtype::F32),
        (2, 1, 8, false, 3, 2, 3, 0, Dtype::F32, Dtype::F32),
    ];
    for (seed, &(heads, kv, hd, clipped, batch, rows, cols, padded, dtype, bound_dtype)) in cases.iter().enumerate() {
        let what =
            format!("{heads}/{kv} heads of {hd}, {dtype:?} (bounds {bound_dtype:?}), batch {batch}, {padded} padded");
        let config = block_config(heads, kv, hd, clipped);
        let weights = block_weights(&config, dtype, bound_dtype, seed as u64 * 100);
        let positions = positions(batch, rows, cols, padded);
        let rope = config.rope_tables(&positions, dtype).unwrap();
        let mask = padding_mask(&positions, dtype);
        let x = random(&[batch, rows * cols, config.hidden_size], seed as u64, 2.0, dtype);

        let attention = VisionAttention::load(&weights.pp("self_attn"), &config).unwrap();
        let mlx = attention.forward(&x, &rope, Some(&mask)).unwrap();
        let host = attention.with_execution(Execution::Host).forward(&x, &rope, Some(&mask)).unwrap();
        assert_same(&mlx, &host, &["gemm", "vision_rms_norm+rope", "attention"], &format!("attention, {what}"));

        let block = VisionBlock::load(&weights, &config).unwrap();
        let mlx = block.forward(&x, &rope, Some(&mask)).unwrap();
        let host = block.with_execution(Execution::Host).forward(&x, &rope, Some(&mask)).unwrap();
        assert_same(&mlx, &host, &["gemm", "attention", "rms_norm", "gelu", "add"], &format!("block, {what}"));
    }
}

#[test]
fn a_block_built_from_parts_runs_on_the_host_too() {
    let config = block_config(2, 2, 8, false);
    let weights = block_weights(&config, Dtype::Bf16, Dtype::Bf16, 7);
    let norm = |name: &str| RmsNorm::load(&weights.pp(name), config.hidden_size, 1e-6).unwrap();
    let block = VisionBlock::new(
        VisionAttention::load(&weights.pp("self_attn"), &config).unwrap(),
        GegluMlp::load(&weights.pp("mlp"), config.hidden_size, config.intermediate_size, false).unwrap(),
        BlockNorms {
            input_layernorm: norm("input_layernorm"),
            post_attention_layernorm: norm("post_attention_layernorm"),
            pre_feedforward_layernorm: norm("pre_feedforward_layernorm"),
            post_feedforward_layernorm: norm("post_feedforward_layernorm"),
        },
    );
    let positions = positions(1, 3, 3, 0);
    let rope = config.rope_tables(&positions, Dtype::Bf16).unwrap();
    let x = random(&[1, 9, config.hidden_size], 3, 2.0, Dtype::Bf16);
    let mlx = block.forward(&x, &rope, None).unwrap();
    let host = block.with_execution(Execution::Host).forward(&x, &rope, None).unwrap();
    assert_same(&mlx, &host, &["gemm", "attention"], "block without a mask");
}

#[test]
fn float16_stays_on_mlx_and_gives_mlx_bits() {
    let x = random(&[1, 5, 12], 1, 2.0, Dtype::F16);
    let linear = Linear::new(shared(random(&[6, 12], 2, 0.5, Dtype::F16)), None);
    let _ = take_kernels_run();
    let host = linear.clone().with_execution(Execution::Host).forward(&x).unwrap();
    assert_eq!(bits(&linear.forward(&x).unwrap()), bits(&host));
    assert!(take_kernels_run().is_empty(), "no host kernel takes float16");
}
