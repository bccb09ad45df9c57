//! Loaded blocks are shared between threads: `Send + Sync`, and a block used from several
//! threads at once gives every thread the same bits.

extern crate gemma_vision_layers as layers;

use layers::{MemoryStore, VisionBlock, VisionBlockConfig, Weights};
use std::sync::Arc;
use tensor::{Array, Dtype};

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn blocks_and_weight_views_are_send_and_sync() {
    assert_send_sync::<VisionBlock>();
    assert_send_sync::<layers::VisionAttention>();
    assert_send_sync::<layers::GegluMlp>();
    assert_send_sync::<layers::LayerNorm>();
    assert_send_sync::<Weights>();
    assert_send_sync::<MemoryStore>();
}

fn ramp(shape: &[i32], step: usize) -> Array {
    let n: i32 = shape.iter().product();
    let values: Vec<f32> = (0..n as usize).map(|i| ((i * step % 23) as f32 - 11.0) / 16.0).collect();
    Array::from_slice(&values, shape).unwrap().astype(Dtype::Bf16).unwrap()
}

#[test]
fn one_block_runs_on_several_threads_at_once_with_identical_results() {
    let config = VisionBlockConfig {
        hidden_size: 16,
        intermediate_size: 32,
        num_heads: 2,
        num_kv_heads: 2,
        head_dim: 8,
        rms_norm_eps: 1e-6,
        rope_theta: 100.0,
        clipped_linears: false,
    };
    let mut keys: Vec<(String, Vec<i32>)> = ["q_proj", "k_proj", "v_proj", "o_proj"]
        .iter()
        .map(|p| (format!("self_attn.{p}.linear.weight"), vec![16, 16]))
        .collect();
    keys.push(("self_attn.q_norm.weight".into(), vec![8]));
    keys.push(("self_attn.k_norm.weight".into(), vec![8]));
    keys.push(("mlp.gate_proj.linear.weight".into(), vec![32, 16]));
    keys.push(("mlp.up_proj.linear.weight".into(), vec![32, 16]));
    keys.push(("mlp.down_proj.linear.weight".into(), vec![16, 32]));
    for norm in
        ["input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"]
    {
        keys.push((format!("{norm}.weight"), vec![16]));
    }
    let arrays = keys.iter().zip(3..).map(|((name, shape), step)| (name.clone(), ramp(shape, step)));
    let weights = Weights::new(Arc::new(MemoryStore::from_arrays(arrays).unwrap()));
    let block = Arc::new(VisionBlock::load(&weights, &config).unwrap());

    fn run(block: &VisionBlock, config: &VisionBlockConfig) -> Vec<u8> {
        let positions = Array::from_slice(&[0i32, 0, 1, 0, 0, 1, 1, 1], &[1, 4, 2]).unwrap();
        let rope = config.rope_tables(&positions, Dtype::Bf16).unwrap();
        let out = block.forward(&ramp(&[1, 4, 16], 5), &rope, None).unwrap();
        out.with_bytes(<[u8]>::to_vec).unwrap()
    }
    let expected = run(&block, &config);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (block, config) = (Arc::clone(&block), config.clone());
            std::thread::spawn(move || (0..5).map(|_| run(&block, &config)).collect::<Vec<_>>())
        })
        .collect();
    for handle in handles {
        for bytes in handle.join().unwrap() {
            assert_eq!(bytes, expected);
        }
    }
}
