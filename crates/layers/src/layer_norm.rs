//! [`LayerNorm`]: MLX's fused layer normalisation.

use crate::{Result, Weights};
use tensor::{Array, SharedArray, fast};

/// MLX's default `LayerNorm` epsilon, which the gemma4 unified embedder keeps.
pub const LAYER_NORM_EPS: f32 = 1e-5;

/// `fast.layer_norm(x, weight, bias, eps)` over the last axis, as `mlx.nn.LayerNorm` (affine,
/// with bias). The output dtype is the promotion of `x`'s, the weight's and the bias's: f32
/// pixels through bf16 weights stay f32.
#[derive(Debug, Clone)]
pub struct LayerNorm {
    weight: SharedArray,
    bias: SharedArray,
    eps: f32,
}

impl LayerNorm {
    /// A layer norm from its `weight` and `bias` (both `[dim]`).
    pub fn new(weight: SharedArray, bias: SharedArray, eps: f32) -> LayerNorm {
        LayerNorm { weight, bias, eps }
    }

    /// Loads `weight` and `bias` `[dim]`.
    pub fn load(weights: &Weights, dim: i32, eps: f32) -> Result<LayerNorm> {
        Ok(LayerNorm::new(weights.get("weight", &[dim])?, weights.get("bias", &[dim])?, eps))
    }

    /// Normalises `x` `[…, dim]` over its last axis.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        Ok(fast::layer_norm(x, Some(&self.weight), Some(&self.bias), self.eps)?)
    }
}
