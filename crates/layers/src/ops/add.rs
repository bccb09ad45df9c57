//! [`add`]: MLX's `add` of two arrays.

use crate::host::{self, HostFloat, host_dtype, with_host_float};
use crate::{Execution, HostKernel, Result, host_kernel};
use tensor::Array;

/// `x + y`, broadcasting and promoting as MLX's `add`. On the host, `kernels::elementwise::add`
/// when both have one dtype and one shape (a residual add); otherwise MLX's `add`.
pub fn add(execution: Execution, x: &Array, y: &Array) -> Result<Array> {
    if x.dtype() == y.dtype()
        && x.shape() == y.shape()
        && let Some(dtype) = host_dtype(execution, &[x.dtype()])
        && let Some(sum) = with_host_float!(dtype, T => on_host::<T>(x, y))
    {
        return sum;
    }
    Ok(x.add(y)?)
}

/// `x + y` (one dtype `T`, one shape) by `kernels::elementwise::add`.
fn on_host<T: HostFloat>(x: &Array, y: &Array) -> Result<Array> {
    let mut out = host::output::<T>(x.size());
    host::with_two::<T, T, _>(x, y, |a, b| Ok(kernels::elementwise::add(a, b, &mut out)?))?;
    host_kernel::record(HostKernel::Add);
    host::from_host(out, &x.shape())
}
