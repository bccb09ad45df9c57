//! [`LayerNorm`]: MLX's fused layer normalisation.

use crate::host::{self, is_host_float, promote, with_host_float};
use crate::{Execution, Result, Weights};
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
    execution: Execution,
}

impl LayerNorm {
    /// A layer norm from its `weight` and `bias` (both `[dim]`).
    pub fn new(weight: SharedArray, bias: SharedArray, eps: f32) -> LayerNorm {
        LayerNorm { weight, bias, eps, execution: Execution::Mlx }
    }

    /// Loads `weight` and `bias` `[dim]`.
    pub fn load(weights: &Weights, dim: i32, eps: f32) -> Result<LayerNorm> {
        Ok(LayerNorm::new(weights.get("weight", &[dim])?, weights.get("bias", &[dim])?, eps))
    }

    /// The same norm computed by `execution`.
    pub fn with_execution(self, execution: Execution) -> LayerNorm {
        LayerNorm { execution, ..self }
    }

    /// Normalises `x` `[…, dim]` over its last axis.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        if self.execution == Execution::Host
            && let Some(y) = self.forward_on_host(x)?
        {
            return Ok(y);
        }
        Ok(fast::layer_norm(x, Some(&self.weight), Some(&self.bias), self.eps)?)
    }

    /// `kernels::layer_norm`, when `x`, the weight and the bias are host floats.
    fn forward_on_host(&self, x: &Array) -> Result<Option<Array>> {
        let dtypes = [x.dtype(), self.weight.dtype(), self.bias.dtype()];
        if !dtypes.iter().all(|&d| is_host_float(d)) {
            return Ok(None);
        }
        let out_dtype = promote(promote(dtypes[0], dtypes[1]), dtypes[2]);
        let shape = x.shape();
        let dim = *shape.last().unwrap_or(&0) as usize;
        let y = with_host_float!(x.dtype(), X => with_host_float!(out_dtype, T => {
            let weight = host::converted::<T>(&self.weight)?;
            let bias = host::converted::<T>(&self.bias)?;
            let mut out = host::output::<T>(x.size());
            host::with_host::<X, _>(x, |x| {
                kernels::layer_norm::layer_norm(x, Some(&weight), Some(&bias), self.eps, dim, &mut out)
            })??;
            host::record("layer_norm");
            host::from_host(out, &shape)
        }));
        y.flatten().transpose()
    }
}
