//! The weight view: presence, shape and dtype checks naming the full key, the shared record of
//! used keys, compute-dtype conversion, and block loaders reporting what is wrong.

extern crate gemma_vision_layers as layers;

use layers::{
    ClippableLinear, Error, MemoryStore, RopeTables, VisionAttention, VisionBlock, VisionBlockConfig, WeightStore,
    Weights,
};
use std::sync::Arc;
use tensor::{Array, Dtype, ShardedSafetensors};

fn ramp(shape: &[i32], dtype: Dtype) -> Array {
    let n: i32 = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|i| ((i % 13) as f32 - 6.0) / 8.0).collect();
    Array::from_slice(&values, shape).unwrap().astype(dtype).unwrap()
}

fn store(entries: &[(&str, &[i32], Dtype)]) -> Arc<MemoryStore> {
    let arrays = entries.iter().map(|(name, shape, dtype)| (name.to_string(), ramp(shape, *dtype)));
    Arc::new(MemoryStore::from_arrays(arrays).unwrap())
}

#[test]
fn get_checks_presence_shape_and_dtype_naming_the_full_key() {
    let weights =
        Weights::new(store(&[("a.w", &[2, 3], Dtype::Bf16), ("a.ids", &[3], Dtype::I32), ("a.s", &[], Dtype::F32)]))
            .pp("a");
    assert_eq!(weights.get("w", &[2, 3]).unwrap().dtype(), Dtype::Bf16);
    assert_eq!(weights.get("s", &[]).unwrap().shape(), Vec::<i32>::new());
    match weights.get("missing", &[1]) {
        Err(Error::Missing { name }) => assert_eq!(name, "a.missing"),
        other => panic!("expected Missing, got {other:?}"),
    }
    match weights.get("w", &[3, 2]) {
        Err(Error::Shape { name, expected, actual }) => {
            assert_eq!((name.as_str(), expected, actual), ("a.w", vec![3, 2], vec![2, 3]));
        }
        other => panic!("expected Shape, got {other:?}"),
    }
    match weights.get("ids", &[3]) {
        Err(Error::Dtype { name, actual, .. }) => assert_eq!((name.as_str(), actual.as_str()), ("a.ids", "int32")),
        other => panic!("expected Dtype, got {other:?}"),
    }
    // Failed gets are not recorded as used.
    assert_eq!(weights.used_keys(), vec!["a.s".to_owned(), "a.w".to_owned()]);
}

#[test]
fn used_keys_are_shared_by_every_view_and_unused_ones_listed_per_prefix() {
    let shared = store(&[
        ("enc.0.x", &[2], Dtype::F32),
        ("enc.0.y", &[2], Dtype::F32),
        ("enc.1.x", &[2], Dtype::F32),
        ("head.z", &[2], Dtype::F32),
    ]);
    let root = Weights::new(shared.clone());
    assert_eq!(root.pp("enc").pp(0).key("x"), "enc.0.x");
    root.pp("enc").pp(0).get("x", &[2]).unwrap();
    root.clone().pp("enc.1").get("x", &[2]).unwrap();
    assert_eq!(root.used_keys(), vec!["enc.0.x".to_owned(), "enc.1.x".to_owned()]);
    assert_eq!(root.pp("enc").unused_keys(), vec!["enc.0.y".to_owned()]);
    assert_eq!(root.unused_keys(), vec!["enc.0.y".to_owned(), "head.z".to_owned()]);
    assert!(root.pp("enc").pp(1).ensure_all_used().is_ok());
    match root.ensure_all_used() {
        Err(Error::Unused { names }) => assert_eq!(names, vec!["enc.0.y".to_owned(), "head.z".to_owned()]),
        other => panic!("expected Unused, got {other:?}"),
    }
    // A fresh view over the same store has its own record.
    let fresh = Weights::new(shared);
    assert!(fresh.used_keys().is_empty());
    assert_eq!(fresh.unused_keys().len(), 4);
}

#[test]
fn compute_dtype_converts_once_at_load() {
    let weights = Weights::new(store(&[("w", &[4, 4], Dtype::Bf16)])).with_compute_dtype(Some(Dtype::F32));
    let w = weights.get("w", &[4, 4]).unwrap();
    assert_eq!(w.dtype(), Dtype::F32);
    assert!(w.is_evaluated());
    let expected = ramp(&[4, 4], Dtype::Bf16).astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), expected);
    assert_eq!(weights.pp("sub").compute_dtype(), Some(Dtype::F32));
}

#[test]
fn safetensors_checkpoints_are_weight_stores() {
    let dir = tensor::testing::TestDir::new("layers-test-weights");
    let path = dir.join("w.safetensors");
    let (w, b) = (ramp(&[3, 2], Dtype::Bf16), ramp(&[3], Dtype::Bf16));
    tensor::save_safetensors(&path, &[("lin.weight", &w), ("lin.bias", &b)], None).unwrap();
    let store = Arc::new(ShardedSafetensors::open(&path).unwrap());
    assert_eq!(WeightStore::names(&*store), vec!["lin.bias".to_owned(), "lin.weight".to_owned()]);
    let weights = Weights::new(store);
    let linear = layers::Linear::load(&weights.pp("lin"), 2, 3, true).unwrap();
    assert_eq!(linear.weight().to_vec::<half::bf16>().unwrap(), w.to_vec::<half::bf16>().unwrap());
    assert!(weights.ensure_all_used().is_ok());
    match layers::Linear::load(&weights.pp("lin"), 3, 3, true) {
        Err(Error::Shape { name, .. }) => assert_eq!(name, "lin.weight"),
        other => panic!("expected Shape, got {other:?}"),
    }
    match weights.get("nope", &[1]) {
        Err(Error::Missing { name }) => assert_eq!(name, "nope"),
        other => panic!("expected Missing, got {other:?}"),
    }
}

fn tiny_config(clipped: bool) -> VisionBlockConfig {
    VisionBlockConfig {
        hidden_size: 8,
        intermediate_size: 16,
        num_heads: 2,
        num_kv_heads: 2,
        head_dim: 4,
        rms_norm_eps: 1e-6,
        rope_theta: 100.0,
        clipped_linears: clipped,
    }
}

fn tiny_block_store(skip: &str) -> Arc<MemoryStore> {
    let mut entries: Vec<(String, Vec<i32>)> = Vec::new();
    for proj in ["q_proj", "k_proj", "v_proj", "o_proj"] {
        entries.push((format!("layers.0.self_attn.{proj}.linear.weight"), vec![8, 8]));
    }
    for norm in ["q_norm", "k_norm"] {
        entries.push((format!("layers.0.self_attn.{norm}.weight"), vec![4]));
    }
    entries.push(("layers.0.mlp.gate_proj.linear.weight".into(), vec![16, 8]));
    entries.push(("layers.0.mlp.up_proj.linear.weight".into(), vec![16, 8]));
    entries.push(("layers.0.mlp.down_proj.linear.weight".into(), vec![8, 16]));
    for norm in
        ["input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"]
    {
        entries.push((format!("layers.0.{norm}.weight"), vec![8]));
    }
    let arrays = entries.into_iter().filter(|(name, _)| name != skip).map(|(name, shape)| {
        let array = ramp(&shape, Dtype::Bf16);
        (name, array)
    });
    Arc::new(MemoryStore::from_arrays(arrays).unwrap())
}

#[test]
fn a_block_loads_every_key_under_its_prefix_and_names_a_missing_one() {
    let weights = Weights::new(tiny_block_store(""));
    let block = VisionBlock::load(&weights.pp("layers.0"), &tiny_config(false)).unwrap();
    assert!(weights.ensure_all_used().is_ok(), "unused: {:?}", weights.unused_keys());
    let positions = Array::from_slice(&[0i32, 0, 1, 0, 0, 1], &[1, 3, 2]).unwrap();
    let rope = tiny_config(false).rope_tables(&positions, Dtype::Bf16).unwrap();
    let out = block.forward(&ramp(&[1, 3, 8], Dtype::Bf16), &rope, None).unwrap();
    assert_eq!((out.shape(), out.dtype()), (vec![1, 3, 8], Dtype::Bf16));

    let weights = Weights::new(tiny_block_store("layers.0.mlp.down_proj.linear.weight"));
    match VisionBlock::load(&weights.pp("layers.0"), &tiny_config(false)) {
        Err(Error::Missing { name }) => assert_eq!(name, "layers.0.mlp.down_proj.linear.weight"),
        other => panic!("expected Missing, got {other:?}"),
    }
    // Clipped layers need their bounds.
    let weights = Weights::new(tiny_block_store(""));
    match VisionBlock::load(&weights.pp("layers.0"), &tiny_config(true)) {
        Err(Error::Missing { name }) => assert_eq!(name, "layers.0.self_attn.q_proj.input_min"),
        other => panic!("expected Missing, got {other:?}"),
    }
}

#[test]
fn clip_bounds_must_be_scalars() {
    let weights = Weights::new(store(&[
        ("p.linear.weight", &[2, 2], Dtype::F32),
        ("p.input_min", &[1], Dtype::F32),
        ("p.input_max", &[], Dtype::F32),
        ("p.output_min", &[], Dtype::F32),
        ("p.output_max", &[], Dtype::F32),
    ]));
    match ClippableLinear::load(&weights.pp("p"), 2, 2, true) {
        Err(Error::Shape { name, expected, .. }) => assert_eq!((name.as_str(), expected), ("p.input_min", vec![])),
        other => panic!("expected Shape, got {other:?}"),
    }
}

#[test]
fn bad_inputs_and_dimensions_are_typed_errors() {
    let weights = Weights::new(tiny_block_store(""));
    let attention = VisionAttention::load(&weights.pp("layers.0.self_attn"), &tiny_config(false)).unwrap();
    let positions = Array::from_slice(&[0i32, 0, 1, 0], &[1, 2, 2]).unwrap();
    let rope = RopeTables::new(&positions, 4, 100.0, Dtype::Bf16).unwrap();
    assert!(matches!(attention.forward(&ramp(&[1, 2, 6], Dtype::Bf16), &rope, None), Err(Error::Input { .. })));
    assert!(matches!(attention.forward(&ramp(&[2, 6], Dtype::Bf16), &rope, None), Err(Error::Input { .. })));
    assert!(matches!(RopeTables::new(&positions, 6, 100.0, Dtype::F32), Err(Error::Config { .. })));
    let flat = Array::from_slice(&[0i32, 1], &[2]).unwrap();
    assert!(matches!(RopeTables::new(&flat, 4, 100.0, Dtype::F32), Err(Error::Input { .. })));
    assert!(matches!(rope.apply(&ramp(&[1, 2, 2, 8], Dtype::Bf16)), Err(Error::Input { .. })));
    let mut config = tiny_config(false);
    config.num_kv_heads = 3;
    assert!(matches!(VisionAttention::load(&weights.pp("layers.0.self_attn"), &config), Err(Error::Config { .. })));
    // Mismatched product shapes are refused by the op's contract, as typed errors.
    let linear = layers::Linear::load(&weights.pp("layers.0.mlp.gate_proj.linear"), 8, 16, false).unwrap();
    assert!(matches!(linear.forward(&ramp(&[1, 3, 5], Dtype::Bf16)), Err(Error::Input { block: "linear", .. })));
}
