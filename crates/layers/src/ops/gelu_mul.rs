//! [`gelu_mul`]: the gated GELU of gemma4's `VisionMLP`.

use super::dispatch::{self, HostDtype, Op, with_host_dtype};
use super::host_kernel::HostKernel;
use super::{contract, gelu_approx, host};
use crate::{Execution, Result};
use tensor::Array;

const OP: &str = "gelu mul";

/// `gelu_approx(gate) * up` for `gate` and `up` of one shape ([`gelu_approx`], compiled as the
/// reference compiles it, then MLX's `multiply`). On the host, `kernels::gelu::gelu_approx_mul`
/// when both have one dtype, its float32 cubic term the one this process's MLX computes
/// ([`gelu_cubic_term`](crate::gelu_cubic_term): fused where MLX's CPU JIT contracts it);
/// otherwise MLX's ops.
pub fn gelu_mul(execution: Execution, gate: &Array, up: &Array) -> Result<Array> {
    dispatch::run(execution, GeluMul { gate, up })
}

struct GeluMul<'a> {
    gate: &'a Array,
    up: &'a Array,
}

impl Op for GeluMul<'_> {
    type Checked = ();
    type Plan = HostDtype;

    fn check(&self) -> Result<()> {
        contract::same_shape(OP, ("the gate", self.gate), ("up", self.up))
    }

    fn plan(&self) -> Option<HostDtype> {
        (self.gate.dtype() == self.up.dtype()).then(|| HostDtype::of(self.gate.dtype())).flatten()
    }

    fn kernel(&self, _: &HostDtype) -> HostKernel {
        HostKernel::Gelu
    }

    fn on_host(&self, (): (), dtype: HostDtype) -> Result<Array> {
        with_host_dtype!(dtype, T => {
            let mut out = host::output::<T>(&self.gate.shape())?;
            host::with_two::<T, T, _>(self.gate, self.up, |g, u| {
                Ok(kernels::gelu::gelu_approx_mul(crate::gelu_cubic_term(), g, u, &mut out)?)
            })?;
            Ok(out.into_array())
        })
    }

    fn on_mlx(&self) -> Result<Array> {
        Ok(gelu_approx(self.gate)?.mul(self.up)?)
    }
}
