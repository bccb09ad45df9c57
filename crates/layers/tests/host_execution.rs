//! Every block computed by the host kernels ([`Execution::Host`]) gives MLX's bits
//! ([`Execution::Mlx`]) on random weights and inputs: float32 and bf16, mixed dtypes, clipped
//! projections with bf16 and float32 bounds (the input's and the output's independently),
//! biases, quantized projections of every mode, bits and group size, masks with padding,
//! grouped-query attention, head dimensions that MLX pads (72) or that are tiny (8), batches;
//! the host path reports the kernels it ran, and the execution rides on [`Weights`] to every
//! block loaded from them.

extern crate gemma_vision_layers as layers;

mod common;

use layers::{
    BlockNorms, ClipBounds, ClippableLinear, Execution, GegluMlp, HostKernel, LayerNorm, Linear, MemoryStore,
    Quantization, QuantizationMode, QuantizedLinear, RmsNorm, VisionAttention, VisionBlock, VisionBlockConfig, Weights,
    take_kernels_run,
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
fn assert_same(mlx: &Array, host: &Array, kernels: &[HostKernel], what: &str) {
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

/// Clip bounds as mlx-vlm stores them: 0-d, the input's in `input`, the output's in `output`.
fn bounds(input: Dtype, output: Dtype) -> ClipBounds {
    ClipBounds {
        input_min: scalar(-1.5, input),
        input_max: scalar(1.25, input),
        output_min: scalar(-0.75, output),
        output_max: scalar(0.5, output),
    }
}

/// Every quantization `nn.QuantizedLinear` computes on MLX 0.32.4: affine 1–6 and 8 bits in
/// groups of 32, 64 and 128; mxfp4, nvfp4, mxfp8.
fn quantizations() -> Vec<Quantization> {
    let mut all = Vec::new();
    for bits in [1, 2, 3, 4, 5, 6, 8] {
        for group in [32, 64, 128] {
            all.push(Quantization::affine(bits, group).unwrap());
        }
    }
    for mode in [QuantizationMode::Mxfp4, QuantizationMode::Nvfp4, QuantizationMode::Mxfp8] {
        all.push(Quantization::default_for(mode));
    }
    all
}

/// An `[n, k]` weight in `dtype` quantized by MLX's `quantize` as `quantization`, computed by
/// `execution`, with a bias in `dtype` when `bias`.
fn quantized(
    quantization: Quantization,
    n: i32,
    k: i32,
    dtype: Dtype,
    bias: bool,
    seed: u64,
    e: Execution,
) -> QuantizedLinear {
    let w = random(&[n, k], seed, 0.5, dtype);
    let (packed, scales, biases) = common::quantize_as(&w, quantization);
    let bias = bias.then(|| shared(random(&[n], seed ^ 11, 1.0, dtype)));
    QuantizedLinear::new(shared(packed), shared(scales), biases.map(shared), bias, quantization, e).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn linear(m in 1i32..40, k in 1i32..70, n in 1i32..40, x_dtype in dtype_strategy(), w_dtype in dtype_strategy(),
              bias in any::<bool>(), seed in any::<u64>()) {
        let x = random(&[2, m, k], seed, 2.0, x_dtype);
        let weight = shared(random(&[n, k], seed ^ 1, 0.5, w_dtype));
        let bias = bias.then(|| shared(random(&[n], seed ^ 2, 1.0, w_dtype)));
        let linear = |e| Linear::new(weight.clone(), bias.clone(), e);
        let mlx = linear(Execution::Mlx).forward(&x).unwrap();
        let host = linear(Execution::Host).forward(&x).unwrap();
        assert_same(&mlx, &host, &[HostKernel::Gemm], "linear");
    }

    #[test]
    fn clippable_linear(m in 1i32..30, k in 1i32..50, n in 1i32..30, dtype in dtype_strategy(),
                        input_bounds in dtype_strategy(), output_bounds in dtype_strategy(), seed in any::<u64>()) {
        let x = random(&[1, m, k], seed, 3.0, dtype);
        let weight = shared(random(&[n, k], seed ^ 3, 0.5, dtype));
        let layer = |e| ClippableLinear::new(Linear::new(weight.clone(), None, e), Some(bounds(input_bounds, output_bounds)));
        let mlx = layer(Execution::Mlx).forward(&x).unwrap();
        let host = layer(Execution::Host).forward(&x).unwrap();
        assert_same(&mlx, &host, &[HostKernel::Gemm], "clippable linear");
    }

    /// `nn.QuantizedLinear` and gemma4's clippable linear over a quantized map on random shapes
    /// (see [`check_quantized`]).
    #[test]
    fn quantized_linear(quantization in prop::sample::select(quantizations()), m in 1i32..12, groups in 1i32..4,
                        n in 1i32..24, x_dtype in dtype_strategy(), w_dtype in dtype_strategy(),
                        bias in prop::option::of(dtype_strategy()),
                        clips in prop::option::of((dtype_strategy(), dtype_strategy())), seed in any::<u64>()) {
        check_quantized(quantization, (m, groups, n), (x_dtype, w_dtype, bias), clips, seed);
    }

    #[test]
    fn rms_norm(rows in 1i32..40, dim in 1i32..100, dtype in dtype_strategy(), weighted in any::<bool>(),
                seed in any::<u64>()) {
        let x = random(&[rows, dim], seed, 4.0, dtype);
        let weight = shared(random(&[dim], seed ^ 4, 2.0, dtype));
        let norm = |e| if weighted { RmsNorm::new(weight.clone(), 1e-6, e) } else { RmsNorm::no_scale(1e-6, e) };
        let host = norm(Execution::Host).forward(&x).unwrap();
        assert_same(&norm(Execution::Mlx).forward(&x).unwrap(), &host, &[HostKernel::RmsNorm], "rms norm");
    }

    #[test]
    fn layer_norm(rows in 1i32..30, dim in 1i32..100, x_dtype in dtype_strategy(), w_dtype in dtype_strategy(),
                  seed in any::<u64>()) {
        let x = random(&[rows, dim], seed, 4.0, x_dtype);
        let (weight, bias) = (shared(random(&[dim], seed ^ 5, 2.0, w_dtype)), shared(random(&[dim], seed ^ 6, 1.0, w_dtype)));
        let norm = |e| LayerNorm::new(weight.clone(), bias.clone(), 1e-5, e);
        let host = norm(Execution::Host).forward(&x).unwrap();
        assert_same(&norm(Execution::Mlx).forward(&x).unwrap(), &host, &[HostKernel::LayerNorm], "layer norm");
    }

    #[test]
    fn geglu_mlp(tokens in 1i32..20, hidden in 1i32..24, intermediate in 1i32..48, dtype in dtype_strategy(),
                 seed in any::<u64>()) {
        let x = random(&[1, tokens, hidden], seed, 2.0, dtype);
        let weights = [(intermediate, hidden, seed ^ 7), (intermediate, hidden, seed ^ 8), (hidden, intermediate, seed ^ 9)]
            .map(|(out, inp, s)| shared(random(&[out, inp], s, 0.5, dtype)));
        let mlp = |e| {
            let [gate, up, down] = weights.clone().map(|w| ClippableLinear::new(Linear::new(w, None, e), None));
            GegluMlp::new(gate, up, down, e)
        };
        let host = mlp(Execution::Host).forward(&x).unwrap();
        assert_same(&mlp(Execution::Mlx).forward(&x).unwrap(), &host, &[HostKernel::Gemm, HostKernel::Gelu], "mlp");
    }
}

/// `nn.QuantizedLinear` (with and without its bias) or, with `clips` (the input's and the output's
/// bound dtypes), gemma4's clippable linear over it: `x` `[2, m, k]` with `k` holding `groups`
/// groups of at least 32 (MLX's `quantize` packs 32 values at a time), `W` `[n, k]` quantized by
/// MLX from values in `w_dtype` (its scales and biases in that dtype), the bias in `bias`'s dtype.
/// The host gives MLX's bits and runs the quantized kernel; an add or clip that promotes runs as
/// MLX's op after it.
fn check_quantized(
    quantization: Quantization,
    (m, groups, n): (i32, i32, i32),
    (x_dtype, w_dtype, bias): (Dtype, Dtype, Option<Dtype>),
    clips: Option<(Dtype, Dtype)>,
    seed: u64,
) {
    let k = groups * (quantization.group_size() as i32).max(32);
    let x = random(&[2, m, k], seed, 2.0, x_dtype);
    let packed = quantized(quantization, n, k, w_dtype, false, seed ^ 5, Execution::Mlx);
    let bias = bias.map(|dtype| shared(random(&[n], seed ^ 6, 1.0, dtype)));
    let layer = |e| {
        let (weight, scales, biases) = (packed.weight().clone(), packed.scales().clone(), packed.biases().cloned());
        QuantizedLinear::new(weight, scales, biases, bias.clone(), quantization, e).unwrap()
    };
    let forward = |e| match clips {
        None => layer(e).forward(&x).unwrap(),
        Some((input, output)) => ClippableLinear::new(layer(e), Some(bounds(input, output))).forward(&x).unwrap(),
    };
    let what = format!(
        "{quantization}, [{m}, {k}] × [{n}, {k}], x {x_dtype:?}, parameters {w_dtype:?}, bias {bias:?}, clips {clips:?}",
        bias = bias.as_ref().map(|b| b.dtype())
    );
    let mlx = forward(Execution::Mlx);
    assert_same(&mlx, &forward(Execution::Host), &[HostKernel::QuantizedMatmul], &what);
}

/// [`check_quantized`] for every quantization and every combination of dtypes: the input, the
/// parameters, the bias (or none) and the bounds (or none), so every promotion the op layer
/// decides on is met.
#[test]
fn quantized_linear_every_mode_and_dtype_combination() {
    let dtypes = [Dtype::F32, Dtype::Bf16];
    let mut seed = 0;
    for quantization in quantizations() {
        for x_dtype in dtypes {
            for w_dtype in dtypes {
                for bias in [None, Some(Dtype::F32), Some(Dtype::Bf16)] {
                    let bounds = dtypes.iter().flat_map(|&i| dtypes.map(|o| Some((i, o))));
                    for clips in std::iter::once(None).chain(bounds) {
                        seed += 1;
                        check_quantized(quantization, (3, 2, 5), (x_dtype, w_dtype, bias), clips, seed);
                    }
                }
            }
        }
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
        let host_weights = weights.clone().with_execution(Execution::Host);
        let positions = positions(batch, rows, cols, padded);
        let rope = config.rope_tables(&positions, dtype).unwrap();
        let mask = padding_mask(&positions, dtype);
        let x = random(&[batch, rows * cols, config.hidden_size], seed as u64, 2.0, dtype);

        let attention = |w: &Weights| VisionAttention::load(&w.pp("self_attn"), &config).unwrap();
        let mlx = attention(&weights).forward(&x, &rope, Some(&mask)).unwrap();
        let host = attention(&host_weights).forward(&x, &rope, Some(&mask)).unwrap();
        let kernels =
            [HostKernel::Gemm, HostKernel::VisionRmsNormRope, HostKernel::VisionRmsNorm, HostKernel::Attention];
        assert_same(&mlx, &host, &kernels, &format!("attention, {what}"));

        let block = |w: &Weights| VisionBlock::load(w, &config).unwrap();
        let mlx = block(&weights).forward(&x, &rope, Some(&mask)).unwrap();
        let host = block(&host_weights).forward(&x, &rope, Some(&mask)).unwrap();
        let kernels = [HostKernel::Gemm, HostKernel::Attention, HostKernel::RmsNorm, HostKernel::Gelu, HostKernel::Add];
        assert_same(&mlx, &host, &kernels, &format!("block, {what}"));
    }
}

#[test]
fn a_block_built_from_parts_runs_on_the_host_too() {
    let config = block_config(2, 2, 8, false);
    let weights = block_weights(&config, Dtype::Bf16, Dtype::Bf16, 7);
    let positions = positions(1, 3, 3, 0);
    let rope = config.rope_tables(&positions, Dtype::Bf16).unwrap();
    let x = random(&[1, 9, config.hidden_size], 3, 2.0, Dtype::Bf16);
    let block = |e: Execution| {
        let weights = weights.clone().with_execution(e);
        let norm = |name: &str| RmsNorm::load(&weights.pp(name), config.hidden_size, 1e-6).unwrap();
        VisionBlock::new(
            VisionAttention::load(&weights.pp("self_attn"), &config).unwrap(),
            GegluMlp::load(&weights.pp("mlp"), config.hidden_size, config.intermediate_size, false).unwrap(),
            BlockNorms {
                input_layernorm: norm("input_layernorm"),
                post_attention_layernorm: norm("post_attention_layernorm"),
                pre_feedforward_layernorm: norm("pre_feedforward_layernorm"),
                post_feedforward_layernorm: norm("post_feedforward_layernorm"),
            },
            e,
        )
    };
    let mlx = block(Execution::Mlx).forward(&x, &rope, None).unwrap();
    let host = block(Execution::Host).forward(&x, &rope, None).unwrap();
    assert_same(&mlx, &host, &[HostKernel::Gemm, HostKernel::Attention, HostKernel::Add], "block without a mask");
}

#[test]
fn the_execution_rides_on_the_weights_to_every_block_loaded_from_them() {
    let config = block_config(2, 1, 8, true);
    let weights = block_weights(&config, Dtype::Bf16, Dtype::Bf16, 9);
    assert_eq!(weights.execution(), Execution::Mlx, "MLX's ops unless chosen");
    let host = weights.clone().with_execution(Execution::Host);
    assert_eq!(host.pp("mlp").pp("up_proj").execution(), Execution::Host, "narrowing keeps it");
    let positions = positions(1, 2, 4, 1);
    let rope = config.rope_tables(&positions, Dtype::Bf16).unwrap();
    let mask = padding_mask(&positions, Dtype::Bf16);
    let x = random(&[1, 8, config.hidden_size], 4, 2.0, Dtype::Bf16);
    let _ = take_kernels_run();
    let mlx = VisionBlock::load(&weights, &config).unwrap().forward(&x, &rope, Some(&mask)).unwrap();
    mlx.eval().unwrap();
    assert_eq!(take_kernels_run(), [], "a block loaded from a default view runs MLX's ops only");
    let ours = VisionBlock::load(&host, &config).unwrap().forward(&x, &rope, Some(&mask)).unwrap();
    let every = [
        HostKernel::Gemm,
        HostKernel::RmsNorm,
        HostKernel::VisionRmsNorm,
        HostKernel::VisionRmsNormRope,
        HostKernel::Attention,
        HostKernel::Gelu,
        HostKernel::Add,
    ];
    assert_eq!(bits(&mlx), bits(&ours));
    assert_eq!(take_kernels_run(), every, "every op of the block ran on the host");
}

#[test]
fn float16_stays_on_mlx_and_gives_mlx_bits() {
    let x = random(&[1, 5, 12], 1, 2.0, Dtype::F16);
    let weight = shared(random(&[6, 12], 2, 0.5, Dtype::F16));
    let _ = take_kernels_run();
    let host = Linear::new(weight.clone(), None, Execution::Host).forward(&x).unwrap();
    assert_eq!(bits(&Linear::new(weight, None, Execution::Mlx).forward(&x).unwrap()), bits(&host));
    assert!(take_kernels_run().is_empty(), "no host kernel takes float16");
}
