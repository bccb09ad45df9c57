//! [`LayerNorm`]: MLX's fused layer normalisation.

use crate::{Execution, Result, Weights, ops};
use tensor::{Array, SharedArray};

/// MLX's default `LayerNorm` epsilon, which the gemma4 unified embedder keeps.
pub const LAYER_NORM_EPS: f32 = 1e-5;

/// `fast.layer_norm(x, weight, bias, eps)` over the last axis, as `mlx.nn.LayerNorm` (affine,
/// with bias). The output dtype is the promotion of `x`'s, the weight's and the bias's: f32
/// pixels through bf16 weights stay f32. Computed by [`ops::layer_norm`] with the block's
/// [`Execution`].
#[derive(Debug, Clone)]
pub struct LayerNorm {
    weight: SharedArray,
    bias: SharedArray,
    eps: f32,
    execution: Execution,
}

impl LayerNorm {
    /// A layer norm from its `weight` and `bias` (both `[dim]`), computed by `execution`.
    pub fn new(weight: SharedArray, bias: SharedArray, eps: f32, execution: Execution) -> LayerNorm {
        LayerNorm { weight, bias, eps, execution }
    }

    /// Loads `weight` and `bias` `[dim]`; computed by the view's execution.
    pub fn load(weights: &Weights, dim: i32, eps: f32) -> Result<LayerNorm> {
        Ok(LayerNorm::new(weights.get("weight", &[dim])?, weights.get("bias", &[dim])?, eps, weights.execution()))
    }

    /// Normalises `x` `[…, dim]` over its last axis.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        ops::layer_norm(self.execution, x, &self.weight, &self.bias, self.eps)
    }
}
