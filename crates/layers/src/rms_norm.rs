//! [`RmsNorm`]: MLX's fused RMS normalisation.

use crate::{Execution, Result, Weights, ops};
use tensor::{Array, SharedArray};

/// `fast.rms_norm(x, weight, eps)` over the last axis, as gemma4's `RMSNorm` (weight used
/// as-is, no `+1`) and, without a weight, `RMSNormNoScale` (`fast.rms_norm(x, None, eps)`).
///
/// The fused kernel normalises and casts to the output dtype (the promotion of `x`'s and the
/// weight's) before multiplying by the weight; that differs from [`VisionRmsNorm`](crate::VisionRmsNorm).
/// Computed by [`ops::rms_norm`] with the block's [`Execution`].
#[derive(Debug, Clone)]
pub struct RmsNorm {
    weight: Option<SharedArray>,
    eps: f32,
    execution: Execution,
}

impl RmsNorm {
    /// A norm with scale `weight` `[dim]`, computed by `execution`.
    pub fn new(weight: SharedArray, eps: f32, execution: Execution) -> RmsNorm {
        RmsNorm { weight: Some(weight), eps, execution }
    }

    /// The parameter-free variant (`fast.rms_norm(x, None, eps)`), computed by `execution`.
    pub fn no_scale(eps: f32, execution: Execution) -> RmsNorm {
        RmsNorm { weight: None, eps, execution }
    }

    /// Loads `weight` `[dim]`; computed by the view's execution.
    pub fn load(weights: &Weights, dim: i32, eps: f32) -> Result<RmsNorm> {
        Ok(RmsNorm::new(weights.get("weight", &[dim])?, eps, weights.execution()))
    }

    /// The epsilon added to the mean square.
    pub fn eps(&self) -> f32 {
        self.eps
    }

    /// Normalises `x` `[…, dim]` over its last axis.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        ops::rms_norm(self.execution, x, self.weight.as_deref(), self.eps)
    }
}
