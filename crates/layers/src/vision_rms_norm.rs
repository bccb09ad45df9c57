//! [`VisionRmsNorm`]: gemma4's float32 RMS normalisation of attention heads.

use crate::{Result, Weights};
use tensor::{Array, Dtype, SharedArray};

/// The epsilon of the reference's `VisionRMSNorm`: its constructor default, never the config's.
pub const VISION_RMS_NORM_EPS: f64 = 1e-6;

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
#[derive(Debug, Clone)]
pub struct VisionRmsNorm {
    weight: Option<SharedArray>,
}

impl VisionRmsNorm {
    /// The scaled variant (`VisionRMSNorm`) with `weight` `[dim]`.
    pub fn new(weight: SharedArray) -> VisionRmsNorm {
        VisionRmsNorm { weight: Some(weight) }
    }

    /// The parameter-free variant (`VisionRMSNormNoScale`).
    pub fn no_scale() -> VisionRmsNorm {
        VisionRmsNorm { weight: None }
    }

    /// Loads `weight` `[dim]`.
    pub fn load(weights: &Weights, dim: i32) -> Result<VisionRmsNorm> {
        Ok(VisionRmsNorm::new(weights.get("weight", &[dim])?))
    }

    /// The scale, if any (`[dim]`).
    pub(crate) fn weight(&self) -> Option<&SharedArray> {
        self.weight.as_ref()
    }

    /// Normalises `x` `[…, dim]` over its last axis; the output has `x`'s dtype.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        let f = x.astype(Dtype::F32)?;
        let var = f.power(2)?.mean(&[-1], true)?;
        let normed = f.mul(&var.add(VISION_RMS_NORM_EPS)?.rsqrt()?)?;
        let scaled = match &self.weight {
            Some(weight) => normed.mul(&weight.astype(Dtype::F32)?)?,
            None => normed,
        };
        Ok(scaled.astype(x.dtype())?)
    }
}
