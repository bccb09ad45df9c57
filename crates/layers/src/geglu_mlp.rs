//! [`GegluMlp`]: gemma4's `VisionMLP`.

use crate::{Arithmetic, ClippableLinear, Error, Result, Weights, gelu_approx};
use tensor::{Array, Dtype};

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
    arithmetic: Arithmetic,
}

impl GegluMlp {
    /// An MLP from its three projections, computing [`Arithmetic::Reference`].
    pub fn new(gate_proj: ClippableLinear, up_proj: ClippableLinear, down_proj: ClippableLinear) -> GegluMlp {
        GegluMlp { gate_proj, up_proj, down_proj, arithmetic: Arithmetic::Reference }
    }

    /// Loads `gate_proj`, `up_proj` and `down_proj`.
    pub fn load(weights: &Weights, hidden: i32, intermediate: i32, clipped: bool) -> Result<GegluMlp> {
        Ok(GegluMlp::new(
            ClippableLinear::load(&weights.pp("gate_proj"), hidden, intermediate, clipped)?,
            ClippableLinear::load(&weights.pp("up_proj"), hidden, intermediate, clipped)?,
            ClippableLinear::load(&weights.pp("down_proj"), intermediate, hidden, clipped)?,
        ))
    }

    /// The same MLP computing `arithmetic`. With [`Arithmetic::HostFloat32`] the gated GELU
    /// runs on the host over the evaluated gate and up projections (float32 inputs only).
    pub fn with_arithmetic(mut self, arithmetic: Arithmetic) -> GegluMlp {
        self.arithmetic = arithmetic;
        self
    }

    /// `x` `[…, hidden]` → `[…, hidden]`.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        let gate = self.gate_proj.forward(x)?;
        let up = self.up_proj.forward(x)?;
        let gated = match self.arithmetic {
            Arithmetic::Reference => gelu_approx(&gate)?.mul(&up)?,
            Arithmetic::HostFloat32 => gelu_tanh_mul_on_host(&gate, &up)?,
        };
        self.down_proj.forward(&gated)
    }
}

/// `gelu_approx(gate) * up` for float32 `gate` and `up` of one shape, computed on the host.
fn gelu_tanh_mul_on_host(gate: &Array, up: &Array) -> Result<Array> {
    if gate.dtype() != Dtype::F32 || up.dtype() != Dtype::F32 || gate.shape() != up.shape() {
        return Err(Error::Input {
            block: "host GELU",
            what: format!(
                "gate {:?} {:?} and up {:?} {:?} must be float32 of one shape",
                gate.shape(),
                gate.dtype(),
                up.shape(),
                up.dtype()
            ),
        });
    }
    Array::eval_all(&[gate, up])?;
    let mut out = vec![0f32; gate.size()];
    gate.with_slice(|g: &[f32]| up.with_slice(|u: &[f32]| tensor::host::gelu_tanh_mul(g, u, &mut out)))??;
    Ok(Array::from_vec(out, &gate.shape())?)
}
