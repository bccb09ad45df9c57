//! [`Linear`]: `mlx.nn.Linear`.

use crate::{Result, Weights};
use tensor::{Array, SharedArray};

/// An affine map `y = x Wᵀ (+ b)`, as `mlx.nn.Linear.__call__`:
/// - without bias: `matmul(x, transpose(W))`;
/// - with bias: `addmm(b, x, transpose(W))` (α = β = 1), one fused op, which in bf16 is not
///   bit-identical to a matmul followed by an add.
///
/// `W` is `[out, in]`, `b` is `[out]`; `x` is `[…, in]`. The input is not cast: mixed dtypes
/// promote as MLX promotes them (callers cast where the reference casts).
#[derive(Debug, Clone)]
pub struct Linear {
    weight: SharedArray,
    bias: Option<SharedArray>,
}

impl Linear {
    /// A linear map from its weight `[out, in]` and optional bias `[out]`.
    pub fn new(weight: SharedArray, bias: Option<SharedArray>) -> Linear {
        Linear { weight, bias }
    }

    /// Loads `weight` `[out_dim, in_dim]` and, when `bias`, `bias` `[out_dim]`.
    pub fn load(weights: &Weights, in_dim: i32, out_dim: i32, bias: bool) -> Result<Linear> {
        let weight = weights.get("weight", &[out_dim, in_dim])?;
        let bias = if bias { Some(weights.get("bias", &[out_dim])?) } else { None };
        Ok(Linear::new(weight, bias))
    }

    /// The weight, `[out, in]`.
    pub fn weight(&self) -> &SharedArray {
        &self.weight
    }

    /// The bias, `[out]`, if any.
    pub fn bias(&self) -> Option<&SharedArray> {
        self.bias.as_ref()
    }

    /// `x @ W.T`, or `addmm(b, x, W.T)` with a bias.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        let weight_t = self.weight.t()?;
        Ok(match &self.bias {
            Some(bias) => bias.addmm(x, &weight_t, 1.0, 1.0)?,
            None => x.matmul(&weight_t)?,
        })
    }
}
