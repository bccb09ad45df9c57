//! [`run`]: the one place an op of the op layer chooses between MLX's ops and the host kernels,
//! and the one policy it follows.
//!
//! 1. The op's documented contract ([`Op::check`]) is checked first, under every execution:
//!    a call that breaks it fails with the same [`Error::Input`](crate::Error::Input) whoever
//!    would have computed it, and a call that keeps it is computed by either.
//! 2. With [`Execution::Host`], the op plans its host computation from its operands' dtypes
//!    ([`Op::plan`]); `None` (an operand the host kernels do not take, float16 say) runs MLX's
//!    ops. A plan names every dtype the host path reads in ([`HostDtype`]), so the host path
//!    has no dtype branch left to fail: past the plan, an error is a real one.
//! 3. The host kernel that ran is recorded ([`take_kernels_run`](crate::take_kernels_run)).

use super::host_kernel::{self, HostKernel};
use crate::{Execution, Result};
use tensor::{Array, Dtype};

/// A float dtype the host kernels compute in: float32 or bf16.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostDtype {
    F32,
    Bf16,
}

impl HostDtype {
    /// `dtype` as a host dtype; `None` for any dtype the host kernels do not take.
    pub(crate) fn of(dtype: Dtype) -> Option<HostDtype> {
        match dtype {
            Dtype::F32 => Some(HostDtype::F32),
            Dtype::Bf16 => Some(HostDtype::Bf16),
            _ => None,
        }
    }

    /// MLX's type promotion of host floats: float32 if any is float32, else bf16; `None` if any
    /// dtype is not a host float, or none is given.
    pub(crate) fn promote(dtypes: &[Dtype]) -> Option<HostDtype> {
        let mut promoted = None;
        for &dtype in dtypes {
            promoted = match (promoted, HostDtype::of(dtype)?) {
                (Some(HostDtype::F32), _) | (_, HostDtype::F32) => Some(HostDtype::F32),
                _ => Some(HostDtype::Bf16),
            };
        }
        promoted
    }

    /// The MLX dtype.
    pub(crate) fn dtype(self) -> Dtype {
        match self {
            HostDtype::F32 => Dtype::F32,
            HostDtype::Bf16 => Dtype::Bf16,
        }
    }
}

/// Evaluates `$body` with the type alias `$t` standing for the element type of the
/// [`HostDtype`] `$dtype` (`f32` or `half::bf16`).
macro_rules! with_host_dtype {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            $crate::ops::dispatch::HostDtype::F32 => {
                type $t = f32;
                $body
            }
            $crate::ops::dispatch::HostDtype::Bf16 => {
                type $t = half::bf16;
                $body
            }
        }
    };
}
pub(crate) use with_host_dtype;

/// One call of an op of the op layer: its operands, its contract, its MLX op sequence and its
/// host computation. [`run`] is the only caller of these methods.
pub(crate) trait Op {
    /// What the contract check learns of the operands (their extents), for the host path.
    type Checked;
    /// The dtypes the host path computes in.
    type Plan;

    /// The op's documented contract on its operands' ranks and extents.
    fn check(&self) -> Result<Self::Checked>;

    /// The host computation's dtypes, when every operand's dtype is one the host kernels take;
    /// `None` runs MLX's ops.
    fn plan(&self) -> Option<Self::Plan>;

    /// The host kernel [`Op::on_host`] runs with `plan`, as recorded.
    fn kernel(&self, plan: &Self::Plan) -> HostKernel;

    /// The op on the host, with the checked extents and the plan.
    fn on_host(&self, checked: Self::Checked, plan: Self::Plan) -> Result<Array>;

    /// The op as MLX's ops, in the reference's order.
    fn on_mlx(&self) -> Result<Array>;
}

/// Computes `op` under `execution`, by the policy of this module.
pub(crate) fn run<O: Op>(execution: Execution, op: O) -> Result<Array> {
    let checked = op.check()?;
    let plan = match execution {
        Execution::Host => op.plan(),
        Execution::Mlx => None,
    };
    let Some(plan) = plan else { return op.on_mlx() };
    let kernel = op.kernel(&plan);
    let out = op.on_host(checked, plan)?;
    host_kernel::record(kernel);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_is_mlx_s_among_host_floats_and_refuses_anything_else() {
        assert_eq!(HostDtype::promote(&[Dtype::Bf16, Dtype::Bf16]), Some(HostDtype::Bf16));
        assert_eq!(HostDtype::promote(&[Dtype::Bf16, Dtype::F32]), Some(HostDtype::F32));
        assert_eq!(HostDtype::promote(&[Dtype::F32, Dtype::Bf16]), Some(HostDtype::F32));
        assert_eq!(HostDtype::promote(&[Dtype::F32, Dtype::F16]), None);
        assert_eq!(HostDtype::promote(&[]), None);
        assert_eq!(HostDtype::of(Dtype::Bf16).map(HostDtype::dtype), Some(Dtype::Bf16));
    }
}
