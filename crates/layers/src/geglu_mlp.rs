//! [`GegluMlp`]: gemma4's `VisionMLP`.

use crate::host::{self, HostFloat, with_host_float};
use crate::{ClippableLinear, Execution, Result, Weights, gelu_approx};
use tensor::Array;

/// The gated feed-forward of the gemma4 vision encoder (`VisionMLP`):
/// `down(gelu_approx(gate(x)) * up(x))`, each projection a [`ClippableLinear`].
///
/// Keys: `gate_proj.*` `[intermediate, hidden]`, `up_proj.*` `[intermediate, hidden]`,
/// `down_proj.*` `[hidden, intermediate]` (see [`ClippableLinear`] for the keys of each).
#[derive(Debug, Clone)]
pub struct GegluMlp {
    gate_proj: ClippableLinear,
    up_proj: ClippableLinear,
    down_proj: ClippableLinear,
    execution: Execution,
}

impl GegluMlp {
    /// An MLP from its three projections, computed by MLX.
    pub fn new(gate_proj: ClippableLinear, up_proj: ClippableLinear, down_proj: ClippableLinear) -> GegluMlp {
        GegluMlp { gate_proj, up_proj, down_proj, execution: Execution::Mlx }
    }

    /// Loads `gate_proj`, `up_proj` and `down_proj`.
    pub fn load(weights: &Weights, hidden: i32, intermediate: i32, clipped: bool) -> Result<GegluMlp> {
        Ok(GegluMlp::new(
            ClippableLinear::load(&weights.pp("gate_proj"), hidden, intermediate, clipped)?,
            ClippableLinear::load(&weights.pp("up_proj"), hidden, intermediate, clipped)?,
            ClippableLinear::load(&weights.pp("down_proj"), intermediate, hidden, clipped)?,
        ))
    }

    /// The same MLP computed by `execution` (its projections and the gated GELU).
    pub fn with_execution(self, execution: Execution) -> GegluMlp {
        GegluMlp {
            gate_proj: self.gate_proj.with_execution(execution),
            up_proj: self.up_proj.with_execution(execution),
            down_proj: self.down_proj.with_execution(execution),
            execution,
        }
    }

    /// `x` `[…, hidden]` → `[…, hidden]`.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        let gate = self.gate_proj.forward(x)?;
        let up = self.up_proj.forward(x)?;
        let gated = match self.execution {
            Execution::Host if gate.dtype() == up.dtype() && gate.shape() == up.shape() => {
                with_host_float!(gate.dtype(), T => gelu_mul_on_host::<T>(&gate, &up)).transpose()?
            }
            _ => None,
        };
        let gated = match gated {
            Some(gated) => gated,
            None => gelu_approx(&gate)?.mul(&up)?,
        };
        self.down_proj.forward(&gated)
    }
}

/// `gelu_approx(gate) * up` by `kernels::gelu` (same dtype `T` and shape, checked by the caller).
fn gelu_mul_on_host<T: HostFloat>(gate: &Array, up: &Array) -> Result<Array> {
    let mut out = host::output::<T>(gate.size());
    host::with_two::<T, T, _>(gate, up, |g, u| Ok(kernels::gelu::gelu_approx_mul(g, u, &mut out)?))?;
    host::record("gelu");
    host::from_host(out, &gate.shape())
}
