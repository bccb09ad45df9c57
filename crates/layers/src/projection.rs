//! [`Projection`]: a linear map stored dense or quantized.

use crate::{Execution, Linear, Quantization, QuantizedLinear, Result, Weights};
use tensor::Array;

/// A linear map as a checkpoint stores it: a float weight ([`Linear`], `mlx.nn.Linear`) or a
/// packed one ([`QuantizedLinear`], `mlx.nn.QuantizedLinear`, which mlx-vlm substitutes for
/// every module whose `scales` the checkpoint holds). Each computes exactly what its
/// reference module computes.
#[derive(Debug, Clone)]
pub enum Projection {
    Dense(Linear),
    Quantized(QuantizedLinear),
}

impl Projection {
    /// Loads the map at the view's prefix: quantized when the view's
    /// [`QuantizationPlan`](crate::QuantizationPlan) lists the prefix, else dense.
    pub fn load(weights: &Weights, in_dim: i32, out_dim: i32, bias: bool) -> Result<Projection> {
        Ok(match weights.quantization() {
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
        }
    }

    /// The same map computed by `execution` (a quantized map always runs on MLX).
    pub fn with_execution(self, execution: Execution) -> Projection {
        match self {
            Projection::Dense(linear) => Projection::Dense(linear.with_execution(execution)),
            quantized @ Projection::Quantized(_) => quantized,
        }
    }

    /// The map applied to `x` `[…, in]`.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        match self {
            Projection::Dense(linear) => linear.forward(x),
            Projection::Quantized(quantized) => quantized.forward(x),
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
