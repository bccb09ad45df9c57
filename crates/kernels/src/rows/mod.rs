//! The kernels over rows of a last axis: the norms ([`rms_norm`], [`vision_rms_norm`],
//! [`layer_norm`]) and RoPE ([`rope`]), each reproducing one MLX op sequence per row; and the
//! checks and sizes they (and the element-wise kernels) share. The crate re-exports the kernels
//! at its root (`kernels::rms_norm`, …).

pub mod layer_norm;
pub mod rms_norm;
pub mod rope;
pub mod vision_rms_norm;

use crate::{Error, Result};

/// Elements a parallel block holds at least: below this a thread's share is not worth a task.
pub(crate) const PARALLEL_MIN_ELEMENTS: usize = 1 << 14;

/// Rows per parallel block for rows of `dim` elements.
pub(crate) fn min_rows(dim: usize) -> usize {
    PARALLEL_MIN_ELEMENTS.div_ceil(dim.max(1))
}

/// The number of rows of `dim` elements in an input of `input` elements written to an output
/// of `output` elements: [`Error::Shape`] unless `dim > 0`, the lengths agree and `dim`
/// divides them.
pub(crate) fn rows(kernel: &'static str, input: usize, output: usize, dim: usize) -> Result<usize> {
    if dim == 0 {
        return Err(Error::shape(kernel, "the last axis is empty"));
    }
    if input != output {
        return Err(Error::shape(kernel, format!("input of {input} values, output of {output}")));
    }
    if !input.is_multiple_of(dim) {
        return Err(Error::shape(kernel, format!("{input} values are not rows of {dim}")));
    }
    Ok(input / dim)
}

/// [`Error::Shape`] unless the parameter `name` (a weight, a bias) has `dim` values.
pub(crate) fn parameter(kernel: &'static str, name: &str, len: Option<usize>, dim: usize) -> Result<()> {
    match len {
        Some(len) if len != dim => Err(Error::shape(kernel, format!("{name} of {len} values for rows of {dim}"))),
        _ => Ok(()),
    }
}

/// `1 / n` as MLX's `mean` makes it: `array(1.0 / n, float32)`, the double rounded to float32.
pub(crate) fn inverse_count(n: usize) -> f32 {
    (1.0 / n as f64) as f32
}
