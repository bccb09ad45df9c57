//! Operands: arrays, or Rust numbers that take their dtype from the other operand.

use crate::{Array, Dtype, Result, SharedArray};
use half::{bf16, f16};

/// The second operand of a binary operation.
///
/// Arrays pass through unchanged (MLX then promotes mixed dtypes). A Rust number is "weak",
/// as a Python scalar is in MLX's Python API: it is created in the other operand's dtype, so
/// `x.mul(0.5)` on a bf16 `x` multiplies by bf16 0.5 and stays bf16. Precisely:
/// - a float takes a floating operand's dtype (rounded through f32, as Python does, except
///   for f64), and is f32 beside an integer or bool operand;
/// - an integer takes the operand's dtype (int32 beside a bool operand);
/// - a bool is a bool array.
pub trait Operand {
    /// This operand as an array, given the array it will be combined with.
    fn into_operand(self, like: &Array) -> Result<Array>;

    /// Whether this operand is a weak scalar (its dtype follows the other operand).
    fn is_weak(&self) -> bool {
        true
    }
}

impl Operand for &Array {
    fn is_weak(&self) -> bool {
        false
    }

    fn into_operand(self, _like: &Array) -> Result<Array> {
        Ok(self.clone())
    }
}

impl Operand for Array {
    fn is_weak(&self) -> bool {
        false
    }

    fn into_operand(self, _like: &Array) -> Result<Array> {
        Ok(self)
    }
}

impl Operand for &SharedArray {
    fn is_weak(&self) -> bool {
        false
    }

    fn into_operand(self, _like: &Array) -> Result<Array> {
        Ok((**self).clone())
    }
}

impl Operand for f64 {
    #[track_caller]
    fn into_operand(self, like: &Array) -> Result<Array> {
        weak_float(self, like.dtype())
    }
}

impl Operand for f32 {
    #[track_caller]
    fn into_operand(self, like: &Array) -> Result<Array> {
        weak_float(f64::from(self), like.dtype())
    }
}

impl Operand for i32 {
    #[track_caller]
    fn into_operand(self, like: &Array) -> Result<Array> {
        weak_int(i64::from(self), like.dtype())
    }
}

impl Operand for i64 {
    #[track_caller]
    fn into_operand(self, like: &Array) -> Result<Array> {
        weak_int(self, like.dtype())
    }
}

impl Operand for bool {
    #[track_caller]
    fn into_operand(self, _like: &Array) -> Result<Array> {
        Array::from_bools(&[self], &[])
    }
}

/// A 0-d array holding `value` in `dtype`, converted as MLX's `array(value, dtype)` does.
#[track_caller]
pub(crate) fn weak_float(value: f64, dtype: Dtype) -> Result<Array> {
    let single = value as f32;
    match dtype {
        Dtype::F64 => Array::scalar(value),
        Dtype::Bf16 => Array::scalar(bf16::from_f32(single)),
        Dtype::F16 => Array::scalar(f16::from_f32(single)),
        _ => Array::scalar(single),
    }
}

#[track_caller]
fn weak_int(value: i64, dtype: Dtype) -> Result<Array> {
    match dtype {
        Dtype::Bool => Array::scalar(i32::try_from(value).map_err(|_| overflow(value, Dtype::I32))?),
        Dtype::F64 => Array::scalar(value as f64),
        Dtype::F32 | Dtype::Bf16 | Dtype::F16 => weak_float(value as f64, dtype),
        Dtype::I64 => Array::scalar(value),
        Dtype::U64 => Array::scalar(u64::try_from(value).map_err(|_| overflow(value, dtype))?),
        Dtype::C64 => weak_float(value as f64, Dtype::F32),
        _ => {
            let narrow = i32::try_from(value).map_err(|_| overflow(value, dtype))?;
            Array::scalar(narrow)?.astype(dtype)
        }
    }
}

fn overflow(value: i64, dtype: Dtype) -> crate::Error {
    crate::Error::Shape { op: "scalar", detail: format!("converting {value} to {dtype} would overflow") }
}
