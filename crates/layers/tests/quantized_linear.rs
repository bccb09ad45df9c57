//! [`QuantizedLinear`] against MLX's own `mlx.nn.QuantizedLinear`, bit for bit, for every
//! quantization mode, group size and bit width, in bf16, in float32 after the user's cast
//! (`set_dtype(float32)`: scales and biases float32, packed tensors unchanged), and with float32
//! inputs on bf16 parameters, computed by MLX's ops and by the host kernels; and 1-bit affine
//! linears against mlx-vlm's own `OneBitLinear`. The fixtures are made by
//! `fixtures/make_quantized_fixtures.py` and `fixtures/make_one_bit_fixtures.py`.

extern crate gemma_vision_layers as layers;

use layers::{
    Error, Execution, HostKernel, MemoryStore, Projection, Quantization, QuantizationMode, QuantizationPlan,
    QuantizedLinear, Weights, take_kernels_run,
};
mod common;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tensor::{Array, Dtype, ShardedSafetensors};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn bytes(a: &Array) -> Vec<u8> {
    a.with_bytes(<[u8]>::to_vec).unwrap()
}

fn plan(key: &str, quantization: Quantization) -> Arc<QuantizationPlan> {
    Arc::new(QuantizationPlan::new(BTreeMap::from([(key.to_owned(), quantization)])))
}

#[test]
fn every_mode_matches_mlx_quantized_linear_bit_for_bit() {
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("quantized_linear.json")).unwrap()).unwrap();
    assert_eq!(manifest.len(), 63, "18 affine (bits × group) + 3 floating-point modes, × 3 dtype setups");
    let store = Arc::new(ShardedSafetensors::open(fixtures().join("quantized_linear.safetensors")).unwrap());
    let mut modes = std::collections::BTreeSet::new();
    for entry in &manifest {
        let name = entry["name"].as_str().unwrap();
        let mode: QuantizationMode = entry["mode"].as_str().unwrap().parse().unwrap();
        let int = |k: &str| entry[k].as_i64().unwrap() as i32;
        let count = |k: &str| entry[k].as_u64().unwrap() as usize;
        let quantization = Quantization::new(mode, count("bits"), count("group_size")).unwrap();
        let key = format!("{name}.weights");
        let compute = (entry["label"] == "float32-cast").then_some(Dtype::F32);
        for execution in [Execution::Mlx, Execution::Host] {
            let weights = Weights::new(store.clone())
                .with_compute_dtype(compute)
                .with_execution(execution)
                .with_quantization(plan(&key, quantization));
            let projection =
                Projection::load(&weights.pp(name).pp("weights"), int("in_dim"), int("out_dim"), entry["bias"] == true)
                    .unwrap();
            let Projection::Quantized(layer) = &projection else { panic!("{name}: the plan lists the module") };
            assert_eq!(layer.quantization(), quantization);
            // The compute dtype converts floating parameters only.
            assert_eq!(layer.weight().dtype(), Dtype::U32, "{name}");
            match (mode, compute) {
                (QuantizationMode::Affine, Some(dtype)) => assert_eq!(layer.scales().dtype(), dtype, "{name}"),
                (QuantizationMode::Affine, None) => assert_eq!(layer.scales().dtype(), Dtype::Bf16, "{name}"),
                _ => assert_eq!(layer.scales().dtype(), Dtype::U8, "{name}"),
            }
            let _ = take_kernels_run();
            let ours = projection.forward(&store.load(&format!("{name}.in.x")).unwrap()).unwrap();
            let ran = take_kernels_run();
            let reference = store.load(&format!("{name}.out")).unwrap();
            let what = format!("{name} ({execution:?})");
            assert_eq!(ours.dtype().to_string(), entry["out_dtype"].as_str().unwrap(), "{what}");
            assert_eq!(ours.shape(), reference.shape(), "{what}");
            assert_eq!(bytes(&ours), bytes(&reference), "{what}: not bit-exact");
            let expected: &[HostKernel] = match execution {
                Execution::Mlx => &[],
                Execution::Host => &[HostKernel::QuantizedMatmul],
            };
            assert_eq!(ran, expected, "{what}: the kernels that ran");
            assert_eq!(weights.pp(&key).unused_keys(), Vec::<String>::new(), "{name}: every stored tensor used");
        }
        modes.insert(mode);
    }
    assert_eq!(modes.len(), 4, "affine, mxfp4, nvfp4, mxfp8");
}

/// 1-bit affine linears against mlx-vlm's own `OneBitLinear` (which mlx-vlm loads them as: a
/// dequantized weight and a matmul, not `quantized_matmul`), for every group size, in the three
/// dtype setups, computed by MLX's ops and by the host kernels (the product is a GEMM).
#[test]
fn one_bit_linears_match_mlx_vlm_one_bit_linear_bit_for_bit() {
    common::require_reference_blas();
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("one_bit_linear.json")).unwrap()).unwrap();
    assert_eq!(manifest.len(), 9, "3 group sizes × 3 dtype setups");
    let store = Arc::new(ShardedSafetensors::open(fixtures().join("one_bit_linear.safetensors")).unwrap());
    for entry in &manifest {
        let name = entry["name"].as_str().unwrap();
        let int = |k: &str| entry[k].as_i64().unwrap() as i32;
        let quantization = Quantization::affine(1, entry["group_size"].as_u64().unwrap() as usize).unwrap();
        let key = format!("{name}.weights");
        let compute = (entry["label"] == "float32-cast").then_some(Dtype::F32);
        for execution in [Execution::Mlx, Execution::Host] {
            let weights = Weights::new(store.clone())
                .with_compute_dtype(compute)
                .with_execution(execution)
                .with_quantization(plan(&key, quantization));
            let projection =
                Projection::load(&weights.pp(name).pp("weights"), int("in_dim"), int("out_dim"), entry["bias"] == true)
                    .unwrap();
            let Projection::OneBit(layer) = &projection else { panic!("{name}: 1-bit loads as OneBitLinear") };
            assert_eq!(layer.quantization(), quantization);
            let _ = take_kernels_run();
            let ours = projection.forward(&store.load(&format!("{name}.in.x")).unwrap()).unwrap();
            let ran = take_kernels_run();
            let reference = store.load(&format!("{name}.out")).unwrap();
            let what = format!("{name} ({execution:?})");
            assert_eq!(ours.dtype().to_string(), entry["out_dtype"].as_str().unwrap(), "{what}");
            assert_eq!(ours.shape(), reference.shape(), "{what}");
            assert_eq!(bytes(&ours), bytes(&reference), "{what}: not bit-exact");
            let expected: &[HostKernel] = match execution {
                Execution::Mlx => &[],
                Execution::Host => &[HostKernel::Gemm],
            };
            assert_eq!(ran, expected, "{what}: the kernels that ran");
            assert_eq!(weights.pp(&key).unused_keys(), Vec::<String>::new(), "{name}: every stored tensor used");
        }
    }
}

#[test]
fn quantization_parameters_are_checked_as_mlx_checks_them() {
    // `kernels`' own type, re-exported: its refusals arrive as `Error::Kernel`.
    use QuantizationMode::*;
    for bits in [1, 2, 3, 4, 5, 6, 8] {
        for group in [32, 64, 128] {
            assert!(Quantization::new(Affine, bits, group).is_ok(), "affine {group} {bits}");
        }
    }
    for (mode, group, bits) in
        [(Affine, 64, 7), (Affine, 16, 4), (Affine, 64, 0), (Affine, 16, 1), (Mxfp4, 64, 4), (Nvfp4, 16, 8)]
    {
        match Quantization::new(mode, bits, group).map_err(Error::from) {
            Err(Error::Kernel(error)) => assert!(error.to_string().contains("MLX supports"), "{error}"),
            other => panic!("{mode} {group} {bits}: {other:?}"),
        }
    }
    // Unset values take MLX's defaults for the mode (`_defaults_for_mode`).
    for (mode, group, bits) in [(Affine, 64, 4), (Mxfp4, 32, 4), (Nvfp4, 16, 4), (Mxfp8, 32, 8)] {
        let q = Quantization::with_defaults(mode, None, None).unwrap();
        assert_eq!((q.group_size(), q.bits()), (group, bits));
        assert_eq!(mode.as_str().parse::<QuantizationMode>().unwrap(), mode);
    }
    assert!("int4".parse::<QuantizationMode>().is_err());
}

/// A store with an `[out, in]` bf16 weight quantized by MLX under `p.*`.
fn quantized_store(quantization: Quantization, out_dim: i32, in_dim: i32) -> MemoryStore {
    let w = Array::from_slice(
        &(0..out_dim * in_dim).map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0).collect::<Vec<_>>(),
        &[out_dim, in_dim],
    )
    .unwrap()
    .astype(Dtype::Bf16)
    .unwrap();
    let (packed, scales, biases) = common::quantize_as(&w, quantization);
    let mut store = MemoryStore::from_arrays([("p.weight", packed), ("p.scales", scales)]).unwrap();
    if let Some(biases) = biases {
        store.insert("p.biases", biases).unwrap();
    }
    store
}

#[test]
fn a_quantized_module_reads_packed_tensors_only_where_the_plan_says_so() {
    let q = Quantization::affine(4, 32).unwrap();
    let store: Arc<dyn layers::WeightStore> = Arc::new(quantized_store(q, 8, 64));
    // Without the plan the packed weight is refused as a dense one, naming the key and dtype.
    match Projection::load(&Weights::new(store.clone()).pp("p"), 64, 8, false) {
        Err(Error::Dtype { name, expected, actual }) => {
            assert_eq!((name.as_str(), expected.as_str(), actual.as_str()), ("p.weight", "a float type", "uint32"));
        }
        other => panic!("{other:?}"),
    }
    // With it, shapes follow from the dimensions: a wrong input width is a shape error.
    let weights = Weights::new(store.clone()).with_quantization(plan("p", q));
    match Projection::load(&weights.pp("p"), 128, 8, false) {
        Err(Error::Shape { name, expected, actual }) => {
            assert_eq!((name.as_str(), expected, actual), ("p.weight", vec![8, 16], vec![8, 8]));
        }
        other => panic!("{other:?}"),
    }
    match Projection::load(&weights.pp("p"), 48, 8, false) {
        Err(Error::Config { what, .. }) => assert!(what.contains("not a multiple of the group size 32"), "{what}"),
        other => panic!("{other:?}"),
    }
    // A bias the checkpoint lacks is missing, by full key.
    match Projection::load(&weights.pp("p"), 64, 8, true) {
        Err(Error::Missing { name }) => assert_eq!(name, "p.bias"),
        other => panic!("{other:?}"),
    }
    let layer = Projection::load(&weights.pp("p"), 64, 8, false).unwrap();
    assert_eq!(layer.quantization(), Some(q));
    assert_eq!(weights.unused_keys(), Vec::<String>::new());
    // The plan's mode decides the scales' dtype: affine scales read as uint8 are refused.
    let mx = Quantization::MXFP4;
    let mx_weights = Weights::new(store).with_quantization(plan("p", mx));
    match Projection::load(&mx_weights.pp("p"), 64, 8, false) {
        Err(Error::Dtype { name, expected, .. }) => {
            assert_eq!((name.as_str(), expected.as_str()), ("p.scales", "uint8"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_constructor_checks_that_the_parts_fit() {
    let q = Quantization::affine(8, 32).unwrap();
    let store = quantized_store(q, 4, 64);
    let get = |k: &str| tensor::SharedArray::new(layers::WeightStore::load(&store, k).unwrap()).unwrap();
    assert!(
        QuantizedLinear::new(get("p.weight"), get("p.scales"), Some(get("p.biases")), None, q, Execution::Mlx).is_ok()
    );
    let cases: Vec<(Option<tensor::SharedArray>, Quantization, &str)> = vec![
        (None, q, "needs per-group biases"),
        (Some(get("p.biases")), Quantization::affine(8, 64).unwrap(), "do not fit"),
        (Some(get("p.biases")), Quantization::MXFP8, "must be uint8"),
    ];
    for (biases, quantization, message) in cases {
        match QuantizedLinear::new(get("p.weight"), get("p.scales"), biases, None, quantization, Execution::Mlx) {
            Err(Error::Input { what, .. }) => assert!(what.contains(message), "{what}"),
            other => panic!("{message}: {other:?}"),
        }
    }
    let bias = tensor::SharedArray::new(Array::ones(&[5], Dtype::Bf16).unwrap()).unwrap();
    match QuantizedLinear::new(get("p.weight"), get("p.scales"), Some(get("p.biases")), Some(bias), q, Execution::Mlx) {
        Err(Error::Input { what, .. }) => assert!(what.contains("expected [4]"), "{what}"),
        other => panic!("{other:?}"),
    }
}
