//! [`RmsNorm`]: MLX's fused RMS normalisation.

use crate::host::{self, is_host_float, promote, with_host_float};
use crate::{Execution, Result, Weights};
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
    execution: Execution,
}

impl RmsNorm {
    /// A norm with scale `weight` `[dim]`.
    pub fn new(weight: SharedArray, eps: f32) -> RmsNorm {
        RmsNorm { weight: Some(weight), eps, execution: Execution::Mlx }
    }

    /// The parameter-free variant (`fast.rms_norm(x, None, eps)`).
    pub fn no_scale(eps: f32) -> RmsNorm {
        RmsNorm { weight: None, eps, execution: Execution::Mlx }
    }

    /// Loads `weight` `[dim]`.
    pub fn load(weights: &Weights, dim: i32, eps: f32) -> Result<RmsNorm> {
        Ok(RmsNorm::new(weights.get("weight", &[dim])?, eps))
    }

    /// The epsilon added to the mean square.
    pub fn eps(&self) -> f32 {
        self.eps
    }

    /// The same norm computed by `execution`.
    pub fn with_execution(mut self, execution: Execution) -> RmsNorm {
        self.execution = execution;
        self
    }

    /// Normalises `x` `[…, dim]` over its last axis.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        if self.execution == Execution::Host
            && let Some(y) = self.forward_on_host(x)?
        {
            return Ok(y);
        }
        Ok(fast::rms_norm(x, self.weight.as_deref(), self.eps)?)
    }

    /// `kernels::rms_norm`, when `x` and the weight are host floats (`None` otherwise).
    fn forward_on_host(&self, x: &Array) -> Result<Option<Array>> {
        let out_dtype = match &self.weight {
            Some(w) if is_host_float(w.dtype()) => promote(x.dtype(), w.dtype()),
            Some(_) => return Ok(None),
            None => x.dtype(),
        };
        if !is_host_float(x.dtype()) || !is_host_float(out_dtype) {
            return Ok(None);
        }
        let shape = x.shape();
        let dim = *shape.last().unwrap_or(&0) as usize;
        let y = with_host_float!(x.dtype(), X => with_host_float!(out_dtype, T => {
            let weight = self.weight.as_ref().map(|w| host::converted::<T>(w)).transpose()?;
            let mut out = host::output::<T>(x.size());
            host::with_host::<X, _>(x, |x| kernels::rms_norm::rms_norm(x, weight.as_deref(), self.eps, dim, &mut out))??;
            host::record("rms_norm");
            host::from_host(out, &shape)
        }));
        y.flatten().transpose()
    }
}
