//! [`layer_norm`]: MLX's fused layer normalisation.

use crate::host::{self, host_dtype, with_host_float};
use crate::{Execution, HostKernel, Result, host_kernel};
use tensor::{Array, fast};

/// `fast.layer_norm(x, weight, bias, eps)` over the last axis of `x` `[…, dim]`, `weight` and
/// `bias` `[dim]`. The output dtype is the promotion of the three (float32 pixels through bf16
/// weights stay float32). On the host, `kernels::layer_norm`.
pub fn layer_norm(execution: Execution, x: &Array, weight: &Array, bias: &Array, eps: f32) -> Result<Array> {
    let Some(out_dtype) = host_dtype(execution, &[x.dtype(), weight.dtype(), bias.dtype()]) else {
        return Ok(fast::layer_norm(x, Some(weight), Some(bias), eps)?);
    };
    let (_, dim) = host::rows(x);
    let y = with_host_float!(x.dtype(), X => with_host_float!(out_dtype, T => {
        let (weight, bias) = (host::converted::<T>(weight)?, host::converted::<T>(bias)?);
        let mut out = host::output::<T>(x.size());
        host::with_host::<X, _>(x, |x| {
            kernels::layer_norm::layer_norm(x, Some(&weight), Some(&bias), eps, dim, &mut out)
        })??;
        host_kernel::record(HostKernel::LayerNorm);
        host::from_host(out, &x.shape())
    }));
    y.flatten().unwrap_or_else(|| Ok(fast::layer_norm(x, Some(weight), Some(bias), eps)?))
}
