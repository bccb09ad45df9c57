//! [`RmsNorm`]: MLX's fused RMS normalisation.

use crate::{Arithmetic, Error, Result, Weights};
use tensor::{Array, Dtype, SharedArray, fast};

/// `fast.rms_norm(x, weight, eps)` over the last axis, as gemma4's `RMSNorm` (weight used
/// as-is, no `+1`) and, without a weight, `RMSNormNoScale` (`fast.rms_norm(x, None, eps)`).
///
/// The fused kernel normalises and casts to the output dtype (the promotion of `x`'s and the
/// weight's) before multiplying by the weight; that differs from [`VisionRmsNorm`](crate::VisionRmsNorm).
#[derive(Debug, Clone)]
pub struct RmsNorm {
    weight: Option<SharedArray>,
    eps: f32,
    arithmetic: Arithmetic,
}

impl RmsNorm {
    /// A norm with scale `weight` `[dim]`.
    pub fn new(weight: SharedArray, eps: f32) -> RmsNorm {
        RmsNorm { weight: Some(weight), eps, arithmetic: Arithmetic::Reference }
    }

    /// The parameter-free variant (`fast.rms_norm(x, None, eps)`).
    pub fn no_scale(eps: f32) -> RmsNorm {
        RmsNorm { weight: None, eps, arithmetic: Arithmetic::Reference }
    }

    /// Loads `weight` `[dim]`.
    pub fn load(weights: &Weights, dim: i32, eps: f32) -> Result<RmsNorm> {
        Ok(RmsNorm::new(weights.get("weight", &[dim])?, eps))
    }

    /// The epsilon added to the mean square.
    pub fn eps(&self) -> f32 {
        self.eps
    }

    /// The same norm computing `arithmetic`. With [`Arithmetic::HostFloat32`] it evaluates `x`
    /// (float32 only) and normalises its rows on the host over every core
    /// ([`tensor::host::rms_norm_rows`]): the same function, the mean summed in another order.
    pub fn with_arithmetic(mut self, arithmetic: Arithmetic) -> RmsNorm {
        self.arithmetic = arithmetic;
        self
    }

    /// Normalises `x` `[…, dim]` over its last axis.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        match self.arithmetic {
            Arithmetic::Reference => Ok(fast::rms_norm(x, self.weight.as_deref(), self.eps)?),
            Arithmetic::HostFloat32 => self.forward_on_host(x),
        }
    }

    fn forward_on_host(&self, x: &Array) -> Result<Array> {
        let shape = x.shape();
        let weight = self.weight.as_deref().map(|w| w.astype(Dtype::F32)).transpose()?;
        let dim = shape.last().copied().unwrap_or(0) as usize;
        let weight_fits = weight.as_ref().is_none_or(|w| w.shape() == [dim as i32]);
        if x.dtype() != Dtype::F32 || dim == 0 || !weight_fits {
            return Err(Error::Input {
                block: "host RMS norm",
                what: format!(
                    "x {shape:?} {:?} must be float32 with a non-empty last axis matching the weight {:?}",
                    x.dtype(),
                    weight.as_ref().map(Array::shape)
                ),
            });
        }
        let weight = weight.map(|w| w.to_vec::<f32>()).transpose()?;
        let mut out = vec![0f32; x.size()];
        x.with_slice(|x: &[f32]| tensor::host::rms_norm_rows(x, dim, weight.as_deref(), self.eps, &mut out))??;
        Ok(Array::from_vec(out, &shape)?)
    }
}
