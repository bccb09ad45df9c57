//! Elementwise unary math and dtype conversion.

use super::unary_ops;
use crate::status::api;
use crate::{Array, Dtype, Result};

unary_ops! {
    /// `e^x`.
    exp => mlx_exp;
    /// Cosine (radians).
    cos => mlx_cos;
    /// Sine (radians).
    sin => mlx_sin;
    /// Hyperbolic tangent.
    tanh => mlx_tanh;
    /// `1 / sqrt(x)`.
    rsqrt => mlx_rsqrt;
    /// Square root.
    sqrt => mlx_sqrt;
    /// `x * x` with MLX's `square` kernel (not bit-identical to `power(x, 2)` on CPU).
    square => mlx_square;
    /// Round toward negative infinity.
    floor => mlx_floor;
    /// Absolute value.
    abs => mlx_abs;
}

impl Array {
    /// Converts to `dtype` (MLX `astype`; float→int truncates toward zero).
    #[track_caller]
    pub fn astype(&self, dtype: Dtype) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self` and this thread's
        // `stream`.
        Array::from_op("astype", |out| unsafe { api().mlx_astype(out, self.as_raw(), dtype.to_raw(), stream) })
    }

    /// Clips to `[min, max]`; either bound may be absent. Bounds are arrays (MLX promotes mixed
    /// dtypes, as the reference's clippable linears rely on).
    #[track_caller]
    pub fn clip(&self, min: Option<&Array>, max: Option<&Array>) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self`, and `min` and `max`
        // live or the null handle mlx-c documents as "no bound"; this thread's `stream`.
        Array::from_op("clip", |out| unsafe {
            api().mlx_clip(out, self.as_raw(), Array::raw_or_absent(min), Array::raw_or_absent(max), stream)
        })
    }

    /// Softmax along `axis`; `precise` accumulates in float32 for low-precision inputs.
    #[track_caller]
    pub fn softmax(&self, axis: i32, precise: bool) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self` and this thread's
        // `stream`.
        Array::from_op("softmax", |out| unsafe { api().mlx_softmax_axis(out, self.as_raw(), axis, precise, stream) })
    }
}
