//! The thread model: an `Array` stays on its thread; a `SharedArray` (evaluated and settled)
//! moves between threads and is shared by them. That an `Array` cannot cross is checked at
//! compile time, by the `compile_fail` examples on `Array`.

extern crate gemma_vision_tensor as tensor;

use std::sync::{Arc, Barrier};
use tensor::{Array, Dtype, SharedArray};

/// Compile-time: what crosses threads.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<SharedArray>();
    send_and_sync::<Arc<SharedArray>>();
};

#[test]
fn shared_arrays_move_between_threads() {
    let a = SharedArray::new(Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap().add(1.0).unwrap()).unwrap();
    let doubled = std::thread::spawn(move || a.mul(2.0).unwrap().to_vec::<f32>().unwrap()).join().unwrap();
    assert_eq!(doubled, [4.0, 6.0, 8.0]);
}

#[test]
fn a_settled_graph_is_read_by_many_threads_at_once_and_by_its_own() {
    // The shared node is the output of a lazy graph whose other handle stays on this thread:
    // both see it settled, and every thread's reads, evaluations and graphs on it agree.
    let lazy = Array::arange(0.0, 256.0, 1.0, Dtype::F32).unwrap().reshape(&[16, 16]).unwrap().mul(0.5).unwrap();
    let shared = Arc::new(SharedArray::new(lazy.clone()).unwrap());
    let expected = lazy.matmul(&lazy).unwrap().add(1.0).unwrap().to_vec::<f32>().unwrap();
    let threads = 6;
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (shared, start) = (Arc::clone(&shared), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                (0..20)
                    .map(|_| {
                        assert!(shared.is_evaluated());
                        shared.eval().unwrap();
                        let own = SharedArray::clone(&shared).into_inner();
                        Array::eval_all(&[&own, &shared]).unwrap();
                        shared.matmul(&own).unwrap().add(1.0).unwrap().to_vec::<f32>().unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for _ in 0..20 {
        assert!(lazy.is_evaluated());
        assert_eq!(lazy.matmul(&shared).unwrap().add(1.0).unwrap().to_vec::<f32>().unwrap(), expected);
    }
    for handle in handles {
        for result in handle.join().unwrap() {
            assert_eq!(result, expected);
        }
    }
}

#[test]
fn shared_arrays_serve_many_threads_at_once() {
    let w = Arc::new(
        SharedArray::new(Array::arange(0.0, 64.0, 1.0, Dtype::F32).unwrap().reshape(&[8, 8]).unwrap()).unwrap(),
    );
    let expected = w.matmul(&w.t().unwrap()).unwrap().to_vec::<f32>().unwrap();
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let w = Arc::clone(&w);
            std::thread::spawn(move || {
                (0..20).map(|_| w.matmul(&w.t().unwrap()).unwrap().to_vec::<f32>().unwrap()).collect::<Vec<_>>()
            })
        })
        .collect();
    for handle in handles {
        for result in handle.join().unwrap() {
            assert_eq!(result, expected);
        }
    }
}

#[test]
fn shared_arrays_are_evaluated_at_construction() {
    let lazy = Array::ones(&[4], Dtype::F32).unwrap().mul(3.0).unwrap();
    assert!(!lazy.is_evaluated());
    let shared = SharedArray::new(lazy).unwrap();
    assert!(shared.is_evaluated());
}

#[test]
fn a_device_can_be_chosen_for_a_scope() {
    let out =
        tensor::with_device(tensor::Device::Cpu, || Array::ones(&[2], Dtype::F32).unwrap().add(1.0).unwrap()).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), [2.0, 2.0]);
}
