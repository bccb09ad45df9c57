//! [`rms_norm`]: MLX's fused RMS normalisation.

use super::contract;
use super::dispatch::{self, HostDtype, Op, with_host_dtype};
use super::host;
use super::host_kernel::HostKernel;
use crate::{Execution, Result};
use tensor::{Array, fast};

const OP: &str = "rms norm";

/// `fast.rms_norm(x, weight, eps)` over the last axis of `x` `[…, dim]`, `weight` `[dim]` or
/// none. The output dtype is the promotion of `x`'s and the weight's; the kernel normalises and
/// casts to it before multiplying by the weight. On the host, `kernels::rms_norm`.
pub fn rms_norm(execution: Execution, x: &Array, weight: Option<&Array>, eps: f32) -> Result<Array> {
    dispatch::run(execution, RmsNorm { x, weight, eps })
}

struct RmsNorm<'a> {
    x: &'a Array,
    weight: Option<&'a Array>,
    eps: f32,
}

impl Op for RmsNorm<'_> {
    type Checked = usize;
    /// The input's dtype and the output's.
    type Plan = (HostDtype, HostDtype);

    fn check(&self) -> Result<usize> {
        let dim = contract::last_extent(OP, "x", self.x)?;
        if let Some(weight) = self.weight {
            contract::vector(OP, "the weight", weight, dim)?;
        }
        Ok(dim as usize)
    }

    fn plan(&self) -> Option<Self::Plan> {
        let mut dtypes = vec![self.x.dtype()];
        dtypes.extend(self.weight.map(|w| w.dtype()));
        Some((HostDtype::of(self.x.dtype())?, HostDtype::promote(&dtypes)?))
    }

    fn kernel(&self, _: &Self::Plan) -> HostKernel {
        HostKernel::RmsNorm
    }

    fn on_host(&self, dim: usize, (x_dtype, out_dtype): Self::Plan) -> Result<Array> {
        let (x, eps) = (self.x, self.eps);
        with_host_dtype!(x_dtype, X => with_host_dtype!(out_dtype, T => {
            let weight = self.weight.map(host::converted::<T>).transpose()?;
            let mut out = host::output::<T>(&x.shape())?;
            host::with_host::<X, _>(x, |x| kernels::rms_norm::rms_norm(x, weight.as_deref(), eps, dim, &mut out))??;
            Ok(out.into_array())
        }))
    }

    fn on_mlx(&self) -> Result<Array> {
        Ok(fast::rms_norm(self.x, self.weight, self.eps)?)
    }
}
