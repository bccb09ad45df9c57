//! Reductions over one or several axes.

use crate::status::api;
use crate::{Array, Result};

macro_rules! reductions {
    ($($(#[$doc:meta])* $name:ident => $ffi:ident;)*) => {
        impl Array {
            $(
                $(#[$doc])*
                #[track_caller]
                pub fn $name(&self, axes: &[i32], keepdims: bool) -> Result<Array> {
                    let stream = crate::device::current_stream()?;
                    // SAFETY: the op-call contract of `Array::from_op`: the live `self`, `axes` as
                    // its own pointer and length, and this thread's `stream`.
                    Array::from_op(stringify!($name), |out| unsafe {
                        crate::status::api().$ffi(out, self.as_raw(), axes.as_ptr(), axes.len(), keepdims, stream)
                    })
                }
            )*
        }
    };
}

reductions! {
    /// Sum over `axes`.
    sum => mlx_sum_axes;
    /// Arithmetic mean over `axes`.
    mean => mlx_mean_axes;
    /// Maximum over `axes`.
    max => mlx_max_axes;
    /// Minimum over `axes`.
    min => mlx_min_axes;
    /// Whether all elements over `axes` are true.
    all => mlx_all_axes;
    /// Whether any element over `axes` is true.
    any => mlx_any_axes;
}

impl Array {
    /// Index of the maximum along `axis`.
    #[track_caller]
    pub fn argmax(&self, axis: i32, keepdims: bool) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self` and this thread's
        // `stream`.
        Array::from_op("argmax", |out| unsafe { api().mlx_argmax_axis(out, self.as_raw(), axis, keepdims, stream) })
    }
}
