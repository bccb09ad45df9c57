//! [`GegluMlp`]: gemma4's `VisionMLP`.

use crate::{ClippableLinear, Result, Weights, gelu_approx};
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
}

impl GegluMlp {
    /// An MLP from its three projections.
    pub fn new(gate_proj: ClippableLinear, up_proj: ClippableLinear, down_proj: ClippableLinear) -> GegluMlp {
        GegluMlp { gate_proj, up_proj, down_proj }
    }

    /// Loads `gate_proj`, `up_proj` and `down_proj`.
    pub fn load(weights: &Weights, hidden: i32, intermediate: i32, clipped: bool) -> Result<GegluMlp> {
        Ok(GegluMlp::new(
            ClippableLinear::load(&weights.pp("gate_proj"), hidden, intermediate, clipped)?,
            ClippableLinear::load(&weights.pp("up_proj"), hidden, intermediate, clipped)?,
            ClippableLinear::load(&weights.pp("down_proj"), intermediate, hidden, clipped)?,
        ))
    }

    /// `x` `[…, hidden]` → `[…, hidden]`.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        let gate = gelu_approx(&self.gate_proj.forward(x)?)?;
        let up = self.up_proj.forward(x)?;
        self.down_proj.forward(&gate.mul(&up)?)
    }
}
