//! [`add`]: the residual add of two arrays.

use super::contract;
use super::dispatch::{self, HostDtype, Op, with_host_dtype};
use super::host;
use super::host_kernel::HostKernel;
use crate::{Execution, Result};
use tensor::Array;

const OP: &str = "add";

/// `x + y` for `x` and `y` of one shape (a residual add), promoting as MLX's `add`. On the
/// host, `kernels::elementwise::add` when both have one dtype; otherwise MLX's `add`.
pub fn add(execution: Execution, x: &Array, y: &Array) -> Result<Array> {
    dispatch::run(execution, Add { x, y })
}

struct Add<'a> {
    x: &'a Array,
    y: &'a Array,
}

impl Op for Add<'_> {
    type Checked = ();
    type Plan = HostDtype;

    fn check(&self) -> Result<()> {
        contract::same_shape(OP, ("x", self.x), ("y", self.y))
    }

    fn plan(&self) -> Option<HostDtype> {
        (self.x.dtype() == self.y.dtype()).then(|| HostDtype::of(self.x.dtype())).flatten()
    }

    fn kernel(&self, _: &HostDtype) -> HostKernel {
        HostKernel::Add
    }

    fn on_host(&self, (): (), dtype: HostDtype) -> Result<Array> {
        with_host_dtype!(dtype, T => {
            let mut out = host::output::<T>(&self.x.shape())?;
            host::with_two::<T, T, _>(self.x, self.y, |a, b| Ok(kernels::elementwise::add(a, b, &mut out)?))?;
            Ok(out.into_array())
        })
    }

    fn on_mlx(&self) -> Result<Array> {
        Ok(self.x.add(self.y)?)
    }
}
