//! Helpers shared by the tensor integration tests.
#![allow(dead_code, reason = "each test file uses a subset")]

use tensor::{Array, Dtype};

/// An f32 array of `shape` from `values`, converted to `dtype`.
pub fn array(values: &[f32], shape: &[i32], dtype: Dtype) -> Array {
    Array::from_slice(values, shape).unwrap().astype(dtype).unwrap()
}

/// The values of `a` as f32 (converted from its dtype), row-major.
pub fn values(a: &Array) -> Vec<f32> {
    a.astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap()
}

/// Asserts `a` has `dtype`, `shape` and exactly `expected` values.
#[track_caller]
pub fn assert_exact(a: &Array, dtype: Dtype, shape: &[i32], expected: &[f32]) {
    assert_eq!(a.dtype(), dtype, "dtype");
    assert_eq!(a.shape(), shape, "shape");
    assert_eq!(values(a), expected, "values");
}

/// Asserts `a` has `dtype` and values within `tol` (relative) of `expected`.
#[track_caller]
pub fn assert_close(a: &Array, dtype: Dtype, expected: &[f32], tol: f32) {
    assert_eq!(a.dtype(), dtype, "dtype");
    let got = values(a);
    assert_eq!(got.len(), expected.len(), "length");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!((g - e).abs() <= tol * e.abs().max(1.0), "element {i}: got {g}, expected {e}");
    }
}

/// The float dtypes every arithmetic test runs in.
pub const FLOATS: [Dtype; 2] = [Dtype::F32, Dtype::Bf16];
