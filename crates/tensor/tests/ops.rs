//! Every op against hand-computed values, in float32 and bfloat16. Inputs are chosen so that
//! the exact results are representable in both dtypes.

extern crate gemma_vision_tensor as tensor;

mod common;

use common::{FLOATS, array, assert_close, assert_exact, values};
use tensor::fast::{self, AttentionMask};
use tensor::{Array, Dtype};

#[test]
fn elementwise_arithmetic() {
    for dtype in FLOATS {
        let a = array(&[1.0, -2.0, 3.5, 4.0], &[2, 2], dtype);
        let b = array(&[0.5, 2.0, -1.0, 8.0], &[2, 2], dtype);
        assert_exact(&a.add(&b).unwrap(), dtype, &[2, 2], &[1.5, 0.0, 2.5, 12.0]);
        assert_exact(&a.sub(&b).unwrap(), dtype, &[2, 2], &[0.5, -4.0, 4.5, -4.0]);
        assert_exact(&a.mul(&b).unwrap(), dtype, &[2, 2], &[0.5, -4.0, -3.5, 32.0]);
        assert_exact(&a.div(&b).unwrap(), dtype, &[2, 2], &[2.0, -1.0, -3.5, 0.5]);
        assert_exact(&a.maximum(&b).unwrap(), dtype, &[2, 2], &[1.0, 2.0, 3.5, 8.0]);
        assert_exact(&a.minimum(&b).unwrap(), dtype, &[2, 2], &[0.5, -2.0, -1.0, 4.0]);
        assert_exact(&a.neg().unwrap(), dtype, &[2, 2], &[-1.0, 2.0, -3.5, -4.0]);
        assert_exact(&a.power(2).unwrap(), dtype, &[2, 2], &[1.0, 4.0, 12.25, 16.0]);
        assert_exact(&a.square().unwrap(), dtype, &[2, 2], &[1.0, 4.0, 12.25, 16.0]);
        assert_exact(&a.abs().unwrap(), dtype, &[2, 2], &[1.0, 2.0, 3.5, 4.0]);
        assert_exact(&a.floor().unwrap(), dtype, &[2, 2], &[1.0, -2.0, 3.0, 4.0]);
        assert_exact(&a.floor_div(2).unwrap(), dtype, &[2, 2], &[0.0, -1.0, 1.0, 2.0]);
    }
}

#[test]
fn broadcasting() {
    for dtype in FLOATS {
        let a = array(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], dtype);
        let row = array(&[10.0, 20.0, 30.0], &[3], dtype);
        assert_exact(&a.add(&row).unwrap(), dtype, &[2, 3], &[11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
        let column = array(&[1.0, -1.0], &[2, 1], dtype);
        assert_exact(&a.mul(&column).unwrap(), dtype, &[2, 3], &[1.0, 2.0, 3.0, -4.0, -5.0, -6.0]);
    }
}

#[test]
fn weak_scalars_keep_the_array_dtype() {
    for dtype in FLOATS {
        let a = array(&[1.0, 2.0], &[2], dtype);
        assert_exact(&a.add(0.5).unwrap(), dtype, &[2], &[1.5, 2.5]);
        assert_exact(&a.mul(2).unwrap(), dtype, &[2], &[2.0, 4.0]);
        assert_exact(&a.sub(1.0f32).unwrap(), dtype, &[2], &[0.0, 1.0]);
    }
    // 0.1 rounds to bf16 0.10009765625 when the scalar takes the array's dtype.
    let one = array(&[1.0], &[1], Dtype::Bf16);
    assert_exact(&one.mul(0.1).unwrap(), Dtype::Bf16, &[1], &[0.100_097_656]);
    // A float scalar beside an integer array is float32; an int scalar keeps int32.
    let ints = Array::from_slice(&[3i32, 4], &[2]).unwrap();
    assert_exact(&ints.mul(0.5).unwrap(), Dtype::F32, &[2], &[1.5, 2.0]);
    assert_eq!(ints.add(1).unwrap().to_vec::<i32>().unwrap(), [4, 5]);
    assert_eq!(ints.floor_div(2).unwrap().to_vec::<i32>().unwrap(), [1, 2]);
}

#[test]
fn mixed_array_dtypes_promote() {
    let a = array(&[1.5], &[1], Dtype::Bf16);
    let b = array(&[2.0], &[1], Dtype::F32);
    assert_exact(&a.mul(&b).unwrap(), Dtype::F32, &[1], &[3.0]);
}

#[test]
fn unary_math() {
    for dtype in FLOATS {
        let tol = if dtype == Dtype::Bf16 { 1e-2 } else { 1e-6 };
        let x = array(&[0.0, 1.0, -0.5, 2.0], &[4], dtype);
        assert_close(&x.exp().unwrap(), dtype, &[1.0, 1.0f32.exp(), (-0.5f32).exp(), 2.0f32.exp()], tol);
        assert_close(&x.cos().unwrap(), dtype, &[1.0, 1.0f32.cos(), (-0.5f32).cos(), 2.0f32.cos()], tol);
        assert_close(&x.sin().unwrap(), dtype, &[0.0, 1.0f32.sin(), (-0.5f32).sin(), 2.0f32.sin()], tol);
        assert_close(&x.tanh().unwrap(), dtype, &[0.0, 1.0f32.tanh(), (-0.5f32).tanh(), 2.0f32.tanh()], tol);
        let p = array(&[4.0, 16.0, 0.25], &[3], dtype);
        assert_exact(&p.rsqrt().unwrap(), dtype, &[3], &[0.5, 0.25, 2.0]);
        assert_exact(&p.sqrt().unwrap(), dtype, &[3], &[2.0, 4.0, 0.5]);
    }
}

#[test]
fn astype_conversions() {
    let x = array(&[1.75, -2.5, 3.0], &[3], Dtype::F32);
    assert_eq!(x.astype(Dtype::I32).unwrap().to_vec::<i32>().unwrap(), [1, -2, 3]);
    assert_exact(&x.astype(Dtype::Bf16).unwrap(), Dtype::Bf16, &[3], &[1.75, -2.5, 3.0]);
    assert_exact(&x.astype(Dtype::F16).unwrap(), Dtype::F16, &[3], &[1.75, -2.5, 3.0]);
    // bf16 keeps 8 significant bits: 1 + 2^-8 rounds to even (1.0).
    let fine = array(&[1.0 + 1.0 / 256.0], &[1], Dtype::Bf16);
    assert_exact(&fine, Dtype::Bf16, &[1], &[1.0]);
}

#[test]
fn matmul_and_addmm() {
    for dtype in FLOATS {
        let a = array(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], dtype);
        let b = array(&[1.0, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2], dtype);
        assert_exact(&a.matmul(&b).unwrap(), dtype, &[2, 2], &[4.0, 5.0, 10.0, 11.0]);
        let c = array(&[0.5, -0.5], &[2], dtype);
        assert_exact(&c.addmm(&a, &b, 1.0, 1.0).unwrap(), dtype, &[2, 2], &[4.5, 4.5, 10.5, 10.5]);
        assert_exact(&c.addmm(&a, &b, 2.0, 0.0).unwrap(), dtype, &[2, 2], &[8.0, 10.0, 20.0, 22.0]);
        // Batched: [2, 1, 3] @ [3, 2] broadcasts the matrix.
        let batched = a.reshape(&[2, 1, 3]).unwrap();
        assert_exact(&batched.matmul(&b).unwrap(), dtype, &[2, 1, 2], &[4.0, 5.0, 10.0, 11.0]);
    }
}

#[test]
fn einsum_matches_matmul() {
    let w = array(&[1.0, 0.0, 0.5, 0.5], &[1, 2, 2], Dtype::F32);
    let x = array(&[1.0, 2.0, 3.0, 4.0], &[1, 2, 2], Dtype::F32);
    let out = Array::einsum("bLl,bLd->bld", &[&w, &x]).unwrap();
    assert_exact(&out, Dtype::F32, &[1, 2, 2], &[2.5, 4.0, 1.5, 2.0]);
}

#[test]
fn shape_ops() {
    for dtype in FLOATS {
        let a = array(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3], dtype);
        assert_exact(&a.transpose(&[1, 0]).unwrap(), dtype, &[3, 2], &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_exact(&a.t().unwrap(), dtype, &[3, 2], &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_exact(&a.reshape(&[3, -1]).unwrap(), dtype, &[3, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_exact(&a.slice(&[0, 1], &[2, 3], None).unwrap(), dtype, &[2, 2], &[1.0, 2.0, 4.0, 5.0]);
        assert_exact(&a.slice(&[0, 0], &[2, 3], Some(&[1, 2])).unwrap(), dtype, &[2, 2], &[0.0, 2.0, 3.0, 5.0]);
        assert_exact(&a.slice_axis(-1, 1, 2).unwrap(), dtype, &[2, 1], &[1.0, 4.0]);
        assert_exact(&a.expand_dims(0).unwrap(), dtype, &[1, 2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_exact(&a.expand_dims(-1).unwrap().squeeze(&[2]).unwrap(), dtype, &[2, 3], &values(&a));
        let b = array(&[9.0, 8.0, 7.0], &[1, 3], dtype);
        assert_exact(&Array::concatenate(&[&a, &b], 0).unwrap(), dtype, &[3, 3], &[0., 1., 2., 3., 4., 5., 9., 8., 7.]);
        assert_exact(&Array::stack(&[&b, &b], 0).unwrap(), dtype, &[2, 1, 3], &[9., 8., 7., 9., 8., 7.]);
        assert_exact(&b.broadcast_to(&[2, 3]).unwrap(), dtype, &[2, 3], &[9., 8., 7., 9., 8., 7.]);
        let padded = b.pad(&[1], &[1], &[2], 0.5).unwrap();
        assert_exact(&padded, dtype, &[1, 6], &[0.5, 9.0, 8.0, 7.0, 0.5, 0.5]);
        let parts = a.split(&[1], 1).unwrap();
        assert_eq!(parts.len(), 2);
        assert_exact(&parts[0], dtype, &[2, 1], &[0.0, 3.0]);
        assert_exact(&parts[1], dtype, &[2, 2], &[1.0, 2.0, 4.0, 5.0]);
    }
}

#[test]
fn take_gathers_along_an_axis() {
    for dtype in FLOATS {
        let table = array(&[0.0, 1.0, 10.0, 11.0, 20.0, 21.0], &[3, 2], dtype);
        let idx = Array::from_slice(&[2i32, 0, 2], &[3]).unwrap();
        assert_exact(&table.take(&idx, 0).unwrap(), dtype, &[3, 2], &[20.0, 21.0, 0.0, 1.0, 20.0, 21.0]);
        let cols = Array::from_slice(&[1i32], &[1]).unwrap();
        assert_exact(&table.take(&cols, 1).unwrap(), dtype, &[3, 1], &[1.0, 11.0, 21.0]);
    }
}

#[test]
fn reductions() {
    for dtype in FLOATS {
        let a = array(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], dtype);
        assert_exact(&a.sum(&[1], false).unwrap(), dtype, &[2], &[6.0, 15.0]);
        assert_exact(&a.sum(&[0, 1], false).unwrap(), dtype, &[], &[21.0]);
        assert_exact(&a.mean(&[-1], true).unwrap(), dtype, &[2, 1], &[2.0, 5.0]);
        assert_exact(&a.max(&[0], false).unwrap(), dtype, &[3], &[4.0, 5.0, 6.0]);
        assert_exact(&a.min(&[1], false).unwrap(), dtype, &[2], &[1.0, 4.0]);
        assert_eq!(a.argmax(1, false).unwrap().to_vec::<u32>().unwrap(), [2, 2]);
    }
}

#[test]
fn clip_with_array_bounds() {
    for dtype in FLOATS {
        let x = array(&[-3.0, -1.0, 0.5, 2.0, 7.0], &[5], dtype);
        let lo = array(&[-1.5], &[], dtype);
        let hi = array(&[2.0], &[], dtype);
        assert_exact(&x.clip(Some(&lo), Some(&hi)).unwrap(), dtype, &[5], &[-1.5, -1.0, 0.5, 2.0, 2.0]);
        assert_exact(&x.clip(Some(&lo), None).unwrap(), dtype, &[5], &[-1.5, -1.0, 0.5, 2.0, 7.0]);
        assert_exact(&x.clip(None, Some(&hi)).unwrap(), dtype, &[5], &[-3.0, -1.0, 0.5, 2.0, 2.0]);
    }
}

#[test]
fn comparisons_logic_and_where() {
    for dtype in FLOATS {
        let a = array(&[1.0, 2.0, 3.0], &[3], dtype);
        let b = array(&[1.0, 0.0, 5.0], &[3], dtype);
        let bools = |x: Array| x.astype(Dtype::U8).unwrap().to_vec::<u8>().unwrap();
        assert_eq!(bools(a.eq(&b).unwrap()), [1, 0, 0]);
        assert_eq!(bools(a.ne(&b).unwrap()), [0, 1, 1]);
        assert_eq!(bools(a.gt(&b).unwrap()), [0, 1, 0]);
        assert_eq!(bools(a.lt(&b).unwrap()), [0, 0, 1]);
        let m = a.gt(1.5).unwrap();
        let n = a.lt(2.5).unwrap();
        assert_eq!(bools(m.logical_and(&n).unwrap()), [0, 1, 0]);
        assert_eq!(bools(m.logical_or(&n).unwrap()), [1, 1, 1]);
        assert_eq!(bools(m.logical_not().unwrap()), [1, 0, 0]);
        assert_eq!(bools(m.all(&[0], false).unwrap()), [0]);
        assert_eq!(bools(m.any(&[0], false).unwrap()), [1]);
        // where(cond, scalar, array): the scalar takes the array's dtype.
        assert_exact(&m.select(0.0, &a).unwrap(), dtype, &[3], &[1.0, 0.0, 0.0]);
        assert_exact(&m.select(&a, -1).unwrap(), dtype, &[3], &[-1.0, 2.0, 3.0]);
    }
}

#[test]
fn creation() {
    let r = Array::arange(0.0, 5.0, 1.0, Dtype::F32).unwrap();
    assert_exact(&r, Dtype::F32, &[5], &[0.0, 1.0, 2.0, 3.0, 4.0]);
    let r = Array::arange(1.0, 2.0, 0.25, Dtype::Bf16).unwrap();
    assert_exact(&r, Dtype::Bf16, &[4], &[1.0, 1.25, 1.5, 1.75]);
    assert_eq!(Array::arange(0.0, 3.0, 1.0, Dtype::I32).unwrap().to_vec::<i32>().unwrap(), [0, 1, 2]);
    assert_exact(&Array::zeros(&[2, 1], Dtype::Bf16).unwrap(), Dtype::Bf16, &[2, 1], &[0.0, 0.0]);
    assert_exact(&Array::ones(&[3], Dtype::F32).unwrap(), Dtype::F32, &[3], &[1.0, 1.0, 1.0]);
    assert_eq!(Array::scalar(7i64).unwrap().item::<i64>().unwrap(), 7);
}

#[test]
fn fast_rms_norm() {
    for dtype in FLOATS {
        // Rows [3, 4] and [1, 1]: mean squares 12.5 and 1; eps 0 keeps the arithmetic exact enough.
        let x = array(&[3.0, 4.0, 1.0, 1.0], &[2, 2], dtype);
        let w = array(&[1.0, 2.0], &[2], dtype);
        let expected = [3.0 / 12.5f32.sqrt(), 8.0 / 12.5f32.sqrt(), 1.0, 2.0];
        let tol = if dtype == Dtype::Bf16 { 1e-2 } else { 1e-6 };
        assert_close(&fast::rms_norm(&x, Some(&w), 0.0).unwrap(), dtype, &expected, tol);
        let no_scale = [3.0 / 12.5f32.sqrt(), 4.0 / 12.5f32.sqrt(), 1.0, 1.0];
        assert_close(&fast::rms_norm(&x, None, 0.0).unwrap(), dtype, &no_scale, tol);
    }
}

#[test]
fn fast_layer_norm() {
    for dtype in FLOATS {
        // Rows [1, 3] and [10, 12]: variance 1 → [-1, 1]; then × weight + bias.
        let x = array(&[1.0, 3.0, 10.0, 12.0], &[2, 2], dtype);
        let w = array(&[2.0, 0.5], &[2], dtype);
        let b = array(&[1.0, -1.0], &[2], dtype);
        assert_exact(
            &fast::layer_norm(&x, Some(&w), Some(&b), 0.0).unwrap(),
            dtype,
            &[2, 2],
            &[-1.0, -0.5, -1.0, -0.5],
        );
        assert_exact(&fast::layer_norm(&x, None, None, 0.0).unwrap(), dtype, &[2, 2], &[-1.0, 1.0, -1.0, 1.0]);
    }
}

#[test]
fn fast_attention_with_an_additive_mask() {
    for dtype in FLOATS {
        // One head, two queries, two keys; equal scores give the mean of the values, and a
        // -1e4 mask on key 1 leaves only value 0.
        let q = array(&[0.0, 0.0, 0.0, 0.0], &[1, 1, 2, 2], dtype);
        let k = array(&[1.0, 2.0, 3.0, 4.0], &[1, 1, 2, 2], dtype);
        let v = array(&[2.0, 4.0, 6.0, 8.0], &[1, 1, 2, 2], dtype);
        let out = fast::scaled_dot_product_attention(&q, &k, &v, 1.0, AttentionMask::None).unwrap();
        assert_exact(&out, dtype, &[1, 1, 2, 2], &[4.0, 6.0, 4.0, 6.0]);
        let mask = array(&[0.0, -1e4, 0.0, -1e4], &[1, 1, 2, 2], dtype);
        let out = fast::scaled_dot_product_attention(&q, &k, &v, 1.0, AttentionMask::Array(&mask)).unwrap();
        assert_exact(&out, dtype, &[1, 1, 2, 2], &[2.0, 4.0, 2.0, 4.0]);
    }
}

#[test]
fn softmax_normalises_the_last_axis() {
    let x = array(&[0.0, 0.0, 1e4, 0.0], &[2, 2], Dtype::F32);
    assert_exact(&x.softmax(-1, false).unwrap(), Dtype::F32, &[2, 2], &[0.5, 0.5, 1.0, 0.0]);
}
