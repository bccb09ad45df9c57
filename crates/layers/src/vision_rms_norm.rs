//! [`VisionRmsNorm`]: gemma4's float32 RMS normalisation of attention heads.

use crate::{Execution, Result, RopeTables, Weights, ops};
use tensor::{Array, SharedArray};

/// RMS normalisation over the last axis computed in float32, as mlx-vlm's `VisionRMSNorm`
/// (with a weight) and `VisionRMSNormNoScale` (without), op for op:
///
/// ```text
/// f = x.astype(f32)
/// var = mean(power(f, 2), -1, keepdims)      # power, not square
/// y = f * rsqrt(var + 1e-6)                  # eps as an f32 weak scalar
/// y = y * weight.astype(f32)                 # only with a weight: scaled in f32, before the cast
/// y.astype(x.dtype)
/// ```
///
/// Computed by [`ops::vision_rms_norm`] with the block's [`Execution`].
#[derive(Debug, Clone)]
pub struct VisionRmsNorm {
    weight: Option<SharedArray>,
    execution: Execution,
}

impl VisionRmsNorm {
    /// The scaled variant (`VisionRMSNorm`) with `weight` `[dim]`, computed by `execution`.
    pub fn new(weight: SharedArray, execution: Execution) -> VisionRmsNorm {
        VisionRmsNorm { weight: Some(weight), execution }
    }

    /// The parameter-free variant (`VisionRMSNormNoScale`), computed by `execution`.
    pub fn no_scale(execution: Execution) -> VisionRmsNorm {
        VisionRmsNorm { weight: None, execution }
    }

    /// Loads `weight` `[dim]`; computed by the view's execution.
    pub fn load(weights: &Weights, dim: i32) -> Result<VisionRmsNorm> {
        Ok(VisionRmsNorm::new(weights.get("weight", &[dim])?, weights.execution()))
    }

    /// The scale, if any (`[dim]`).
    pub fn weight(&self) -> Option<&SharedArray> {
        self.weight.as_ref()
    }

    /// Normalises `x` `[…, dim]` over its last axis; the output has `x`'s dtype.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        ops::vision_rms_norm(self.execution, x, self.weight.as_deref(), None)
    }

    /// Normalises the heads of `x` `[B, L, heads, dim]`, then rotates them by `rope`
    /// (`apply_multidimensional_rope`), as gemma4's attention prepares its queries and keys.
    pub fn forward_rotated(&self, x: &Array, rope: &RopeTables) -> Result<Array> {
        ops::vision_rms_norm(self.execution, x, self.weight.as_deref(), Some(rope))
    }
}
