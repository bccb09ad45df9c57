//! MLX failures become `Err` values carrying MLX's message; the process carries on.

extern crate gemma_vision_tensor as tensor;

use tensor::{Array, Dtype, Error};

fn ones(shape: &[i32]) -> Array {
    Array::ones(shape, Dtype::F32).unwrap()
}

#[test]
fn mismatched_shapes_are_an_error_with_mlx_message() {
    let err = ones(&[2, 3]).add(ones(&[4, 5])).unwrap_err();
    match &err {
        Error::Mlx { op, message, location } => {
            assert_eq!(*op, "add");
            assert!(message.contains("broadcast"), "MLX's message: {message}");
            assert!(!message.contains("mlx/c/"), "mlx-c's own source location is dropped: {message}");
            assert!(location.file().ends_with("errors.rs"), "location points at the caller: {location}");
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(err.to_string().starts_with("add (at "), "{err}");
    // The process continues and later ops succeed.
    let sum = ones(&[2]).add(ones(&[2])).unwrap();
    assert_eq!(sum.to_vec::<f32>().unwrap(), [2.0, 2.0]);
}

#[test]
fn matmul_inner_dimension_mismatch() {
    let err = ones(&[2, 3]).matmul(&ones(&[4, 2])).unwrap_err();
    assert!(matches!(&err, Error::Mlx { op: "matmul", .. }), "{err}");
}

#[test]
fn invalid_reshape_and_axes() {
    assert!(matches!(ones(&[2, 3]).reshape(&[4, 2]).unwrap_err(), Error::Mlx { op: "reshape", .. }));
    assert!(matches!(ones(&[2, 3]).transpose(&[0, 0]).unwrap_err(), Error::Mlx { op: "transpose", .. }));
    assert!(matches!(ones(&[2, 3]).sum(&[5], false).unwrap_err(), Error::Mlx { op: "sum", .. }));
    assert!(matches!(ones(&[2, 3]).slice_axis(4, 0, 1).unwrap_err(), Error::Shape { op: "slice_axis", .. }));
    assert!(matches!(ones(&[2]).dim(3).unwrap_err(), Error::Shape { op: "dim", .. }));
}

#[test]
fn host_data_must_fill_the_shape() {
    let err = Array::from_slice(&[1.0f32, 2.0, 3.0], &[2, 2]).unwrap_err();
    assert!(matches!(&err, Error::Shape { op: "from_slice", .. }), "{err}");
    assert!(err.to_string().contains("3 values do not fill shape [2, 2]"), "{err}");
    assert!(Array::from_slice::<f32>(&[], &[-1]).is_err());
}

#[test]
fn readback_checks_the_dtype() {
    let err = ones(&[2]).to_vec::<i32>().unwrap_err();
    match err {
        Error::Dtype { expected, actual, .. } => {
            assert_eq!(expected, Dtype::I32);
            assert_eq!(actual, Dtype::F32);
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(matches!(ones(&[2]).item::<f32>().unwrap_err(), Error::Shape { op: "item", .. }));
}

#[test]
fn fast_kernels_report_shape_errors() {
    let x = ones(&[2, 4]);
    let w = ones(&[3]);
    assert!(matches!(tensor::fast::rms_norm(&x, Some(&w), 1e-6).unwrap_err(), Error::Mlx { op: "fast.rms_norm", .. }));
    let q = ones(&[1, 2, 3, 8]);
    let k = ones(&[1, 2, 3, 4]);
    let e = tensor::fast::scaled_dot_product_attention(&q, &k, &k, 1.0, tensor::fast::AttentionMask::None);
    assert!(matches!(e.unwrap_err(), Error::Mlx { op: "fast.scaled_dot_product_attention", .. }));
}

#[test]
fn errors_stay_on_their_thread() {
    // A failure on another thread does not leave a message behind for this one.
    std::thread::spawn(|| assert!(ones(&[2]).add(ones(&[3])).is_err())).join().unwrap();
    assert!(ones(&[2]).add(ones(&[2])).is_ok());
    let handles: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let bad = ones(&[2]).add(ones(&[3 + i])).unwrap_err();
                    assert!(bad.to_string().contains(&format!("Shapes (2) and ({})", 3 + i)), "{bad}");
                    assert!(ones(&[2]).add(ones(&[2])).is_ok());
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn arrays_too_large_for_memory_are_refused_before_allocation() {
    let err = Array::ones(&[1 << 20, 1 << 20, 1 << 20], Dtype::F32).unwrap_err();
    assert!(matches!(&err, Error::TooLarge { op: "ones", .. }), "{err}");
    // Through an op whose output is the problem, not its inputs.
    let a = Array::ones(&[1 << 16, 1], Dtype::F32).unwrap();
    let b = Array::ones(&[1, 1 << 20], Dtype::F32).unwrap();
    let err = a.matmul(&b).unwrap_err();
    assert!(matches!(&err, Error::TooLarge { op: "matmul", .. }), "{err}");
    assert!(err.to_string().contains("[65536, 1048576]"), "{err}");
    assert!(a.add(1.0).is_ok(), "the process carries on");
}

#[test]
fn axes_far_out_of_range_are_errors() {
    let err = ones(&[2, 3]).slice_axis(i32::MIN, 0, 1).unwrap_err();
    assert!(matches!(&err, Error::Shape { op: "slice_axis", .. }), "{err}");
    assert!(err.to_string().contains(&format!("axis {} out of range for [2, 3]", i32::MIN)), "{err}");
}
