//! [`gelu_mul`]: the gated GELU of gemma4's `VisionMLP`.

use crate::host::{self, HostFloat, host_dtype, with_host_float};
use crate::{Execution, HostKernel, Result, gelu_approx, host_kernel};
use tensor::Array;

/// `gelu_approx(gate) * up` ([`gelu_approx`]'s op sequence, then MLX's `multiply`). On the host,
/// `kernels::gelu::gelu_approx_mul` when both have one dtype and one shape; otherwise MLX's ops.
pub fn gelu_mul(execution: Execution, gate: &Array, up: &Array) -> Result<Array> {
    if gate.dtype() == up.dtype()
        && gate.shape() == up.shape()
        && let Some(dtype) = host_dtype(execution, &[gate.dtype()])
        && let Some(gated) = with_host_float!(dtype, T => on_host::<T>(gate, up))
    {
        return gated;
    }
    Ok(gelu_approx(gate)?.mul(up)?)
}

/// `gelu_approx(gate) * up` (one dtype `T`, one shape) by `kernels::gelu`.
fn on_host<T: HostFloat>(gate: &Array, up: &Array) -> Result<Array> {
    let mut out = host::output::<T>(gate.size());
    host::with_two::<T, T, _>(gate, up, |g, u| Ok(kernels::gelu::gelu_approx_mul(g, u, &mut out)?))?;
    host_kernel::record(HostKernel::Gelu);
    host::from_host(out, &gate.shape())
}
