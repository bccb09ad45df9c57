//! [`Linear`]: `mlx.nn.Linear`.

use crate::{ClipBounds, Execution, Result, Weights, ops};
use tensor::{Array, SharedArray};

/// An affine map `y = x Wᵀ (+ b)`, as `mlx.nn.Linear.__call__`:
/// - without bias: `matmul(x, transpose(W))`;
/// - with bias: `addmm(b, x, transpose(W))` (α = β = 1), one fused op, which in bf16 is not
///   bit-identical to a matmul followed by an add.
///
/// `W` is `[out, in]`, `b` is `[out]`; `x` is `[…, in]`. The input is not cast: mixed dtypes
/// promote as MLX promotes them (callers cast where the reference casts). Computed by
/// [`ops::linear`] with the block's [`Execution`].
#[derive(Debug, Clone)]
pub struct Linear {
    weight: SharedArray,
    bias: Option<SharedArray>,
    execution: Execution,
}

impl Linear {
    /// A linear map from its weight `[out, in]` and optional bias `[out]`, computed by `execution`.
    pub fn new(weight: SharedArray, bias: Option<SharedArray>, execution: Execution) -> Linear {
        Linear { weight, bias, execution }
    }

    /// Loads `weight` `[out_dim, in_dim]` and, when `bias`, `bias` `[out_dim]`; computed by the
    /// view's execution.
    pub fn load(weights: &Weights, in_dim: i32, out_dim: i32, bias: bool) -> Result<Linear> {
        let weight = weights.get("weight", &[out_dim, in_dim])?;
        let bias = if bias { Some(weights.get("bias", &[out_dim])?) } else { None };
        Ok(Linear::new(weight, bias, weights.execution()))
    }

    /// The weight, `[out, in]`.
    pub fn weight(&self) -> &SharedArray {
        &self.weight
    }

    /// The bias, `[out]`, if any.
    pub fn bias(&self) -> Option<&SharedArray> {
        self.bias.as_ref()
    }

    /// Who computes the map.
    pub fn execution(&self) -> Execution {
        self.execution
    }

    /// `x @ W.T`, or `addmm(b, x, W.T)` with a bias.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_clipped(x, None)
    }

    /// `clip(x)` → this map → `clip(y)` (gemma4's `ClippableLinear`), without clips when `None`.
    pub(crate) fn forward_clipped(&self, x: &Array, clips: Option<&ClipBounds>) -> Result<Array> {
        ops::linear(self.execution, x, &self.weight, self.bias.as_deref(), clips)
    }
}
