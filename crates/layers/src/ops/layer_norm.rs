//! [`layer_norm`]: MLX's fused layer normalisation.

use super::contract;
use super::dispatch::{self, HostDtype, Op, with_host_dtype};
use super::host;
use super::host_kernel::HostKernel;
use crate::{Execution, Result};
use tensor::{Array, fast};

const OP: &str = "layer norm";

/// `fast.layer_norm(x, weight, bias, eps)` over the last axis of `x` `[…, dim]`, `weight` and
/// `bias` `[dim]`. The output dtype is the promotion of the three (float32 pixels through bf16
/// weights stay float32). On the host, `kernels::layer_norm`.
pub fn layer_norm(execution: Execution, x: &Array, weight: &Array, bias: &Array, eps: f32) -> Result<Array> {
    dispatch::run(execution, LayerNorm { x, weight, bias, eps })
}

struct LayerNorm<'a> {
    x: &'a Array,
    weight: &'a Array,
    bias: &'a Array,
    eps: f32,
}

impl Op for LayerNorm<'_> {
    type Checked = usize;
    /// The input's dtype and the output's.
    type Plan = (HostDtype, HostDtype);

    fn check(&self) -> Result<usize> {
        let dim = contract::last_extent(OP, "x", self.x)?;
        contract::vector(OP, "the weight", self.weight, dim)?;
        contract::vector(OP, "the bias", self.bias, dim)?;
        Ok(dim as usize)
    }

    fn plan(&self) -> Option<Self::Plan> {
        let out = HostDtype::promote(&[self.x.dtype(), self.weight.dtype(), self.bias.dtype()])?;
        Some((HostDtype::of(self.x.dtype())?, out))
    }

    fn kernel(&self, _: &Self::Plan) -> HostKernel {
        HostKernel::LayerNorm
    }

    fn on_host(&self, dim: usize, (x_dtype, out_dtype): Self::Plan) -> Result<Array> {
        let (x, eps) = (self.x, self.eps);
        with_host_dtype!(x_dtype, X => with_host_dtype!(out_dtype, T => {
            let (weight, bias) = (host::converted::<T>(self.weight)?, host::converted::<T>(self.bias)?);
            let mut out = host::output::<T>(&x.shape())?;
            host::with_host::<X, _>(x, |x| {
                kernels::layer_norm::layer_norm(x, Some(&weight), Some(&bias), eps, dim, &mut out)
            })??;
            Ok(out.into_array())
        }))
    }

    fn on_mlx(&self) -> Result<Array> {
        Ok(fast::layer_norm(self.x, Some(self.weight), Some(self.bias), self.eps)?)
    }
}
