//! The thread model: `Array` moves between threads, `SharedArray` is shared by them.

extern crate gemma_vision_tensor as tensor;

use std::sync::Arc;
use tensor::{Array, Dtype, SharedArray};

#[test]
fn arrays_move_between_threads() {
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    a.eval().unwrap();
    let doubled = std::thread::spawn(move || a.mul(2.0).unwrap().to_vec::<f32>().unwrap()).join().unwrap();
    assert_eq!(doubled, [2.0, 4.0, 6.0]);
}

#[test]
fn an_unevaluated_graph_evaluated_on_another_thread_is_an_error() {
    // MLX binds a graph node to the stream of the thread that built it (per-thread default
    // streams); evaluating it on another thread is reported, not a crash.
    let lazy = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap().add(1.0).unwrap();
    let err = std::thread::spawn(move || lazy.to_vec::<f32>()).join().unwrap().unwrap_err();
    match err {
        tensor::Error::Mlx { message, .. } => assert!(message.contains("Stream"), "{message}"),
        other => panic!("unexpected error {other}"),
    }
    // Evaluated before the move, it is plain data and works anywhere.
    let ready = Array::from_slice(&[1.0f32, 2.0], &[2]).unwrap().add(1.0).unwrap();
    ready.eval().unwrap();
    assert_eq!(std::thread::spawn(move || ready.to_vec::<f32>().unwrap()).join().unwrap(), [2.0, 3.0]);
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
