//! [`Projection`]: a linear map stored dense or quantized.

use crate::{ClipBounds, Execution, Linear, OneBitLinear, Quantization, QuantizedLinear, Result, Weights};
use tensor::Array;

/// A linear map as a checkpoint stores it: a float weight ([`Linear`], `mlx.nn.Linear`) or a
/// packed one, which mlx-vlm substitutes for every module whose `scales` the checkpoint holds:
/// [`QuantizedLinear`] (`mlx.nn.QuantizedLinear`), or for 1-bit affine weights [`OneBitLinear`]
/// (mlx-vlm's own `OneBitLinear`). Each computes exactly what its reference module computes,
/// with the execution of the view it was loaded from.
#[derive(Debug, Clone)]
pub enum Projection {
    Dense(Linear),
    Quantized(QuantizedLinear),
    OneBit(OneBitLinear),
}

impl Projection {
    /// Loads the map at the view's prefix: quantized when the view's
    /// [`QuantizationPlan`](crate::QuantizationPlan) lists the prefix (1-bit affine as
    /// [`OneBitLinear`]), else dense.
    pub fn load(weights: &Weights, in_dim: i32, out_dim: i32, bias: bool) -> Result<Projection> {
        Ok(match weights.quantization() {
            Some(quantization) if quantization.bits() == 1 => {
                Projection::OneBit(OneBitLinear::load(weights, in_dim, out_dim, bias, quantization)?)
            }
            Some(quantization) => {
                Projection::Quantized(QuantizedLinear::load(weights, in_dim, out_dim, bias, quantization)?)
            }
            None => Projection::Dense(Linear::load(weights, in_dim, out_dim, bias)?),
        })
    }

    /// How the weight is quantized, if it is.
    pub fn quantization(&self) -> Option<Quantization> {
        match self {
            Projection::Dense(_) => None,
            Projection::Quantized(q) => Some(q.quantization()),
            Projection::OneBit(q) => Some(q.quantization()),
        }
    }

    /// Who computes the map.
    pub fn execution(&self) -> Execution {
        match self {
            Projection::Dense(linear) => linear.execution(),
            Projection::Quantized(quantized) => quantized.execution(),
            Projection::OneBit(one_bit) => one_bit.execution(),
        }
    }

    /// The map applied to `x` `[…, in]`.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_clipped(x, None)
    }

    /// `clip(x)` → the map → `clip(y)` (gemma4's `ClippableLinear`), without clips when `None`.
    pub(crate) fn forward_clipped(&self, x: &Array, clips: Option<&ClipBounds>) -> Result<Array> {
        match self {
            Projection::Dense(linear) => linear.forward_clipped(x, clips),
            Projection::Quantized(quantized) => quantized.forward_clipped(x, clips),
            Projection::OneBit(one_bit) => one_bit.forward_clipped(x, clips),
        }
    }
}

impl From<Linear> for Projection {
    fn from(linear: Linear) -> Projection {
        Projection::Dense(linear)
    }
}

impl From<QuantizedLinear> for Projection {
    fn from(quantized: QuantizedLinear) -> Projection {
        Projection::Quantized(quantized)
    }
}

impl From<OneBitLinear> for Projection {
    fn from(one_bit: OneBitLinear) -> Projection {
        Projection::OneBit(one_bit)
    }
}
