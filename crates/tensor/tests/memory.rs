//! RAII: arrays free their memory on drop. MLX's counters are process-wide, so this file
//! holds a single test (each integration test file is its own process).

extern crate gemma_vision_tensor as tensor;

use tensor::{Array, Dtype, memory};

#[test]
fn arrays_and_failed_operations_return_memory_to_the_baseline() {
    // Warm up allocator state and this thread's stream.
    Array::ones(&[64], Dtype::F32).unwrap().add(1.0).unwrap().eval().unwrap();
    let baseline = memory::active_memory().unwrap();
    for i in 0..10_000 {
        let a = Array::from_slice(&[i as f32; 256], &[16, 16]).unwrap();
        let b = a.mul(2.0).unwrap().add(&a).unwrap();
        b.eval().unwrap();
        let c = b.clone();
        drop(b);
        assert_eq!(c.shape(), [16, 16]);
    }
    assert_eq!(memory::active_memory().unwrap(), baseline, "10,000 arrays dropped");

    let a = Array::ones(&[128, 128], Dtype::F32).unwrap();
    a.eval().unwrap();
    let with_a = memory::active_memory().unwrap();
    assert!(with_a > baseline);
    for _ in 0..1_000 {
        assert!(a.matmul(&Array::ones(&[3, 3], Dtype::F32).unwrap()).is_err());
    }
    assert_eq!(memory::active_memory().unwrap(), with_a, "failed operations free their outputs");
    drop(a);
    assert_eq!(memory::active_memory().unwrap(), baseline);
    memory::clear_cache().unwrap();
    assert_eq!(memory::cache_memory().unwrap(), 0);
}
