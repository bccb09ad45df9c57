//! Arrays made from nothing but a shape or a range.

use crate::status::api;
use crate::{Array, Dtype, Result};

impl Array {
    /// `start, start + step, …` below `stop`, in `dtype` (MLX `arange`).
    #[track_caller]
    pub fn arange(start: f64, stop: f64, step: f64, dtype: Dtype) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: no input arrays, only numbers, and this
        // thread's `stream`.
        Array::from_op("arange", |out| unsafe { api().mlx_arange(out, start, stop, step, dtype.to_raw(), stream) })
    }

    /// Zeros of `shape` and `dtype`.
    #[track_caller]
    pub fn zeros(shape: &[i32], dtype: Dtype) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: `shape` as its own pointer and length,
        // and this thread's `stream`.
        Array::from_op("zeros", |out| unsafe {
            api().mlx_zeros(out, shape.as_ptr(), shape.len(), dtype.to_raw(), stream)
        })
    }

    /// Ones of `shape` and `dtype`.
    #[track_caller]
    pub fn ones(shape: &[i32], dtype: Dtype) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: `shape` as its own pointer and length,
        // and this thread's `stream`.
        Array::from_op("ones", |out| unsafe {
            api().mlx_ones(out, shape.as_ptr(), shape.len(), dtype.to_raw(), stream)
        })
    }
}
