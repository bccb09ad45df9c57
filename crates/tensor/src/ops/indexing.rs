//! Gathers.

use crate::status::api;
use crate::{Array, Result};

impl Array {
    /// Gathers entries of `self` along `axis` at `indices` (MLX `take`); the output shape is
    /// `self`'s with `axis` replaced by `indices`' shape.
    #[track_caller]
    pub fn take(&self, indices: &Array, axis: i32) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self` and `indices`, and this
        // thread's `stream`.
        Array::from_op("take", |out| unsafe { api().mlx_take_axis(out, self.as_raw(), indices.as_raw(), axis, stream) })
    }
}
