//! [`RmsNorm`]: MLX's fused RMS normalisation.

use crate::{Result, Weights};
use tensor::{Array, SharedArray, fast};

/// `fast.rms_norm(x, weight, eps)` over the last axis, as gemma4's `RMSNorm` (weight used
/// as-is, no `+1`) and, without a weight, `RMSNormNoScale` (`fast.rms_norm(x, None, eps)`).
///
/// The fused kernel normalises and casts to the output dtype (the promotion of `x`'s and the
/// weight's) before multiplying by the weight; that differs from [`VisionRmsNorm`](crate::VisionRmsNorm).
#[derive(Debug, Clone)]
pub struct RmsNorm {
    weight: Option<SharedArray>,
    eps: f32,
}

impl RmsNorm {
    /// A norm with scale `weight` `[dim]`.
    pub fn new(weight: SharedArray, eps: f32) -> RmsNorm {
        RmsNorm { weight: Some(weight), eps }
    }

    /// The parameter-free variant (`fast.rms_norm(x, None, eps)`).
    pub fn no_scale(eps: f32) -> RmsNorm {
        RmsNorm { weight: None, eps }
    }

    /// Loads `weight` `[dim]`.
    pub fn load(weights: &Weights, dim: i32, eps: f32) -> Result<RmsNorm> {
        Ok(RmsNorm::new(weights.get("weight", &[dim])?, eps))
    }

    /// The epsilon added to the mean square.
    pub fn eps(&self) -> f32 {
        self.eps
    }

    /// Normalises `x` `[…, dim]` over its last axis.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        Ok(fast::rms_norm(x, self.weight.as_deref(), self.eps)?)
    }
}
