//! [`ClipBounds`]: the four clip bounds of gemma4's `ClippableLinear`, as the linear ops take
//! them.

use super::contract;
use super::host::{self, HostFloat};
use crate::Result;
use tensor::{Array, SharedArray};

/// The four 0-d clip bounds of a clipped linear map, in the checkpoint's dtype: the input is
/// clipped to `[input_min, input_max]` before the product, the output to
/// `[output_min, output_max]` after it.
#[derive(Debug, Clone)]
pub struct ClipBounds {
    pub input_min: SharedArray,
    pub input_max: SharedArray,
    pub output_min: SharedArray,
    pub output_max: SharedArray,
}

impl ClipBounds {
    /// The contract of an op taking the bounds (`op`): every bound is 0-d.
    pub(crate) fn check(&self, op: &'static str) -> Result<()> {
        contract::scalar(op, "input_min", &self.input_min)?;
        contract::scalar(op, "input_max", &self.input_max)?;
        contract::scalar(op, "output_min", &self.output_min)?;
        contract::scalar(op, "output_max", &self.output_max)
    }

    /// MLX's `clip(x, input_min, input_max)`.
    pub(crate) fn clip_input(&self, x: &Array) -> Result<Array> {
        Ok(x.clip(Some(&self.input_min), Some(&self.input_max))?)
    }

    /// MLX's `clip(y, output_min, output_max)`.
    pub(crate) fn clip_output(&self, y: &Array) -> Result<Array> {
        Ok(y.clip(Some(&self.output_min), Some(&self.output_max))?)
    }

    /// The input bounds as float32 (exact for the host floats).
    pub(crate) fn input_f32(&self) -> Result<(f32, f32)> {
        Ok((host::scalar_f32(&self.input_min)?, host::scalar_f32(&self.input_max)?))
    }

    /// The output bounds in `O` (the product's dtype, which holds them exactly when the output
    /// clip is fused).
    pub(crate) fn output_as<O: HostFloat>(&self) -> Result<(O, O)> {
        Ok((O::from_f32(host::scalar_f32(&self.output_min)?), O::from_f32(host::scalar_f32(&self.output_max)?)))
    }
}
