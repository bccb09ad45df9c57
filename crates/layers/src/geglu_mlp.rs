//! [`GegluMlp`]: gemma4's `VisionMLP`.

use crate::{ClippableLinear, Execution, Result, Weights, ops};
use tensor::Array;

/// The gated feed-forward of the gemma4 vision encoder (`VisionMLP`):
/// `down(gelu_approx(gate(x)) * up(x))`, each projection a [`ClippableLinear`], the gated GELU
/// [`ops::gelu_mul`] with the block's [`Execution`].
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
    /// An MLP from its three projections, its gated GELU computed by `execution`.
    pub fn new(
        gate_proj: ClippableLinear,
        up_proj: ClippableLinear,
        down_proj: ClippableLinear,
        execution: Execution,
    ) -> GegluMlp {
        GegluMlp { gate_proj, up_proj, down_proj, execution }
    }

    /// Loads `gate_proj`, `up_proj` and `down_proj`; computed by the view's execution.
    pub fn load(weights: &Weights, hidden: i32, intermediate: i32, clipped: bool) -> Result<GegluMlp> {
        Ok(GegluMlp::new(
            ClippableLinear::load(&weights.pp("gate_proj"), hidden, intermediate, clipped)?,
            ClippableLinear::load(&weights.pp("up_proj"), hidden, intermediate, clipped)?,
            ClippableLinear::load(&weights.pp("down_proj"), intermediate, hidden, clipped)?,
            weights.execution(),
        ))
    }

    /// `x` `[…, hidden]` → `[…, hidden]`.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        let gate = self.gate_proj.forward(x)?;
        let up = self.up_proj.forward(x)?;
        self.down_proj.forward(&ops::gelu_mul(self.execution, &gate, &up)?)
    }
}
