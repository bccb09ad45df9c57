//! The attention kernel of [`VisionAttention`] is swappable; the default is the reference's
//! `ensure_fused_sdpa`.

use layers::{AttentionKernel, FusedSdpa, MemoryStore, Result, VisionAttention, VisionBlockConfig, Weights};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tensor::{Array, Dtype};

/// Delegates to [`FusedSdpa`] and counts its calls, recording the shapes it saw.
#[derive(Debug, Default)]
struct Counting {
    calls: AtomicUsize,
}

impl AttentionKernel for Counting {
    fn attend(&self, q: &Array, k: &Array, v: &Array, scale: f32, mask: Option<&Array>) -> Result<Array> {
        assert_eq!((q.shape(), k.shape(), v.shape()), (vec![1, 4, 3, 8], vec![1, 2, 3, 8], vec![1, 2, 3, 8]));
        assert_eq!(scale, 1.0);
        self.calls.fetch_add(1, Ordering::SeqCst);
        FusedSdpa.attend(q, k, v, scale, mask)
    }
}

fn ramp(shape: &[i32], step: usize) -> Array {
    let n: i32 = shape.iter().product();
    let values: Vec<f32> = (0..n as usize).map(|i| ((i * step % 17) as f32 - 8.0) / 16.0).collect();
    Array::from_slice(&values, shape).unwrap().astype(Dtype::Bf16).unwrap()
}

#[test]
fn a_swapped_kernel_is_called_once_per_forward_and_the_default_is_fused_sdpa() {
    let config = VisionBlockConfig {
        hidden_size: 16,
        intermediate_size: 32,
        num_heads: 4,
        num_kv_heads: 2,
        head_dim: 8,
        rms_norm_eps: 1e-6,
        rope_theta: 100.0,
        clipped_linears: false,
    };
    let tensors = [
        ("q_proj.linear.weight", vec![32, 16]),
        ("k_proj.linear.weight", vec![16, 16]),
        ("v_proj.linear.weight", vec![16, 16]),
        ("o_proj.linear.weight", vec![16, 32]),
        ("q_norm.weight", vec![8]),
        ("k_norm.weight", vec![8]),
    ];
    let store = MemoryStore::from_arrays(tensors.iter().zip(3..).map(|((n, s), step)| (*n, ramp(s, step)))).unwrap();
    let weights = Weights::new(Arc::new(store));
    let fused = VisionAttention::load(&weights, &config).unwrap();
    let counting = Arc::new(Counting::default());
    let swapped = fused.clone().with_kernel(counting.clone());

    let x = ramp(&[1, 3, 16], 5);
    let positions = Array::from_slice(&[0i32, 0, 1, 0, 0, 1], &[1, 3, 2]).unwrap();
    let rope = config.rope_tables(&positions, Dtype::Bf16).unwrap();
    let mask = Array::from_slice(&[0.0f32, 0.0, -1e4], &[1, 1, 1, 3]).unwrap().astype(Dtype::Bf16).unwrap();
    let expected = fused.forward(&x, &rope, Some(&mask)).unwrap();
    let got = swapped.forward(&x, &rope, Some(&mask)).unwrap();
    assert_eq!(counting.calls.load(Ordering::SeqCst), 1);
    let bytes = |a: &Array| a.with_bytes(<[u8]>::to_vec).unwrap();
    assert_eq!(bytes(&got), bytes(&expected));
    assert!(format!("{:?}", fused.kernel()).contains("FusedSdpa"));
}
