//! Every block against the reference (mlx-vlm's own modules) at small shapes, bit for bit.
//!
//! The fixtures (`fixtures/blocks.safetensors`, `fixtures/manifest.json`) are made by
//! `fixtures/make_fixtures.py` from the cases of the op parity suite at their small dimensions.
//! Each entry holds the block's weights under mlx-vlm's key names, its inputs and the
//! reference's output; every weight must be used.

extern crate gemma_vision_layers as layers;

use layers::{
    ClippableLinear, GegluMlp, LayerNorm, Linear, RmsNorm, RopeTables, VisionAttention, VisionBlock, VisionBlockConfig,
    VisionRmsNorm, Weights, ensure_fused_sdpa, gelu_approx,
};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use tensor::{Array, ShardedSafetensors};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap().as_array().unwrap().clone()
}

fn dim(dims: &Value, name: &str) -> i32 {
    dims[name].as_i64().unwrap_or_else(|| panic!("dims.{name}")) as i32
}

fn flag(dims: &Value, name: &str) -> bool {
    dims[name].as_bool().unwrap_or_else(|| panic!("dims.{name}"))
}

fn float(dims: &Value, name: &str) -> f64 {
    dims[name].as_f64().unwrap_or_else(|| panic!("dims.{name}"))
}

fn block_config(dims: &Value) -> VisionBlockConfig {
    VisionBlockConfig {
        hidden_size: dim(dims, "hidden_size"),
        intermediate_size: dim(dims, "intermediate_size"),
        num_heads: dim(dims, "num_heads"),
        num_kv_heads: dim(dims, "num_kv_heads"),
        head_dim: dim(dims, "head_dim"),
        rms_norm_eps: float(dims, "rms_norm_eps"),
        rope_theta: float(dims, "rope_theta"),
        clipped_linears: flag(dims, "clipped_linears"),
    }
}

/// Runs our block of `entry` on its inputs; returns (ours, reference).
fn run(entry: &Value) -> (Array, Array) {
    let store: Arc<ShardedSafetensors> =
        Arc::new(ShardedSafetensors::open(fixtures().join("blocks.safetensors")).unwrap());
    let prefix = format!("{}.{}", entry["case"].as_str().unwrap(), entry["label"].as_str().unwrap());
    let input = |name: &str| store.load(&format!("{prefix}.in.{name}")).unwrap();
    let weights = Weights::new(store.clone()).pp(&prefix).pp("weights");
    let dims = &entry["dims"];
    let ours = match entry["block"].as_str().unwrap() {
        "linear" => {
            Linear::load(&weights, dim(dims, "in"), dim(dims, "out"), flag(dims, "bias")).unwrap().forward(&input("x"))
        }
        "clippable_linear" => ClippableLinear::load(&weights, dim(dims, "in"), dim(dims, "out"), flag(dims, "clipped"))
            .unwrap()
            .forward(&input("x")),
        "rms_norm" => {
            let eps = float(dims, "eps") as f32;
            let norm = if flag(dims, "scaled") {
                RmsNorm::load(&weights, dim(dims, "dim"), eps).unwrap()
            } else {
                RmsNorm::no_scale(eps, weights.execution())
            };
            norm.forward(&input("x"))
        }
        "vision_rms_norm" => {
            let norm = if flag(dims, "scaled") {
                VisionRmsNorm::load(&weights, dim(dims, "dim")).unwrap()
            } else {
                VisionRmsNorm::no_scale(weights.execution())
            };
            norm.forward(&input("x"))
        }
        "layer_norm" => {
            LayerNorm::load(&weights, dim(dims, "dim"), float(dims, "eps") as f32).unwrap().forward(&input("x"))
        }
        "gelu_approx" => gelu_approx(&input("x")),
        "geglu_mlp" => GegluMlp::load(&weights, dim(dims, "hidden"), dim(dims, "intermediate"), flag(dims, "clipped"))
            .unwrap()
            .forward(&input("x")),
        "rope" => {
            let x = input("x");
            RopeTables::new(&input("positions"), dim(dims, "head_dim"), float(dims, "theta"), x.dtype())
                .unwrap()
                .apply(&x)
        }
        "sdpa" => {
            ensure_fused_sdpa(&input("q"), &input("k"), &input("v"), float(dims, "scale") as f32, Some(&input("mask")))
        }
        "vision_attention" => {
            let config = block_config(dims);
            let x = input("x");
            let rope = config.rope_tables(&input("positions"), x.dtype()).unwrap();
            VisionAttention::load(&weights, &config).unwrap().forward(&x, &rope, Some(&input("mask")))
        }
        "vision_block" => {
            let config = block_config(dims);
            let x = input("x");
            let rope = config.rope_tables(&input("positions"), x.dtype()).unwrap();
            VisionBlock::load(&weights, &config).unwrap().forward(&x, &rope, Some(&input("mask")))
        }
        other => panic!("unknown block kind {other}"),
    }
    .unwrap();
    assert_eq!(weights.unused_keys(), Vec::<String>::new(), "{prefix}: weights the block did not use");
    (ours, store.load(&format!("{prefix}.out")).unwrap())
}

fn max_abs_diff(a: &Array, b: &Array) -> f32 {
    let a = a.astype(tensor::Dtype::F32).unwrap().to_vec::<f32>().unwrap();
    let b = b.astype(tensor::Dtype::F32).unwrap().to_vec::<f32>().unwrap();
    a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// Asserts that every entry of `case` (one per dtype label) is bit-identical to the reference.
fn check_case(case: &str) {
    let entries: Vec<Value> = manifest().into_iter().filter(|e| e["case"] == case).collect();
    assert!(!entries.is_empty(), "no fixture entries for {case}");
    for entry in &entries {
        let label = entry["label"].as_str().unwrap();
        let (ours, reference) = run(entry);
        assert_eq!(
            (ours.dtype(), ours.shape()),
            (reference.dtype(), reference.shape()),
            "{case}/{label}: dtype and shape"
        );
        let same = ours.with_bytes(|a| reference.with_bytes(|b| a == b).unwrap()).unwrap();
        assert!(same, "{case}/{label}: not bit-exact (max abs diff {})", max_abs_diff(&ours, &reference));
    }
}

macro_rules! fixture_tests {
    ($($name:ident),* $(,)?) => {
        /// One test per case, named as the case.
        mod case {
            $(#[test] fn $name() { super::check_case(stringify!($name)); })*
        }

        /// Every case of the manifest has a test above.
        #[test]
        fn every_fixture_case_is_tested() {
            let tested = [$(stringify!($name)),*];
            for entry in manifest() {
                let case = entry["case"].as_str().unwrap();
                assert!(tested.contains(&case), "fixture case {case} has no test");
            }
        }
    };
}

fixture_tests!(
    linear,
    linear_bias,
    clippable_linear,
    rms_norm,
    rms_norm_no_scale,
    vision_rms_norm,
    vision_rms_norm_no_scale,
    layer_norm,
    gelu_approx,
    geglu_mlp,
    rope_2d,
    rope_2d_padded,
    rope_2d_hd72,
    rope_1d,
    sdpa,
    sdpa_hd72,
    sdpa_gqa,
    vision_attention,
    vision_block,
);
