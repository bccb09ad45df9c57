//! [`rms_norm`]: MLX's fused RMS normalisation.

use crate::host::{self, host_dtype, with_host_float};
use crate::{Execution, HostKernel, Result, host_kernel};
use tensor::{Array, fast};

/// `fast.rms_norm(x, weight, eps)` over the last axis of `x` `[…, dim]`, `weight` `[dim]` or
/// none. The output dtype is the promotion of `x`'s and the weight's; the kernel normalises and
/// casts to it before multiplying by the weight. On the host, `kernels::rms_norm`.
pub fn rms_norm(execution: Execution, x: &Array, weight: Option<&Array>, eps: f32) -> Result<Array> {
    let mut dtypes = vec![x.dtype()];
    dtypes.extend(weight.map(|w| w.dtype()));
    let Some(out_dtype) = host_dtype(execution, &dtypes) else {
        return Ok(fast::rms_norm(x, weight, eps)?);
    };
    let (_, dim) = host::rows(x);
    let y = with_host_float!(x.dtype(), X => with_host_float!(out_dtype, T => {
        let weight = weight.map(host::converted::<T>).transpose()?;
        let mut out = host::output::<T>(x.size());
        host::with_host::<X, _>(x, |x| kernels::rms_norm::rms_norm(x, weight.as_deref(), eps, dim, &mut out))??;
        host_kernel::record(HostKernel::RmsNorm);
        host::from_host(out, &x.shape())
    }));
    y.flatten().unwrap_or_else(|| Ok(fast::rms_norm(x, weight, eps)?))
}
