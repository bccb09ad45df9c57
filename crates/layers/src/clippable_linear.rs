//! [`ClippableLinear`]: gemma4's `ClippableLinear`.

use crate::{ClipBounds, Projection, Result, Weights};
use tensor::Array;

/// Loads the four 0-d bounds `input_min`, `input_max`, `output_min`, `output_max`.
fn load_bounds(weights: &Weights) -> Result<ClipBounds> {
    Ok(ClipBounds {
        input_min: weights.get("input_min", &[])?,
        input_max: weights.get("input_max", &[])?,
        output_min: weights.get("output_min", &[])?,
        output_max: weights.get("output_max", &[])?,
    })
}

/// A bias-free linear map ([`Projection`]: dense or quantized) with optional clamping of its input and output, as
/// `mlx_vlm.models.gemma4.vision.ClippableLinear`:
/// `clip(x, input_min, input_max)` → `x @ W.T` → `clip(y, output_min, output_max)`, where the
/// clips happen only when the layer was built with clipping.
///
/// The bounds are arrays, so MLX promotes: with bf16 activations and f32 bounds the clipped
/// input, and everything after it, is f32 (the reference does not cast, and neither does this).
/// The three steps are one op of the op layer ([`ops::linear`](crate::ops::linear) or
/// [`ops::quantized_linear`](crate::ops::quantized_linear)), computed by the map's execution.
///
/// Keys: `linear.weight` `[out, in]` (quantized: `linear.{weight,scales,biases}`); with clipping
/// also the four 0-d bounds of [`ClipBounds`].
#[derive(Debug, Clone)]
pub struct ClippableLinear {
    linear: Projection,
    clip: Option<ClipBounds>,
}

impl ClippableLinear {
    /// A clippable linear from its linear map and, when clipping, its bounds.
    pub fn new(linear: impl Into<Projection>, clip: Option<ClipBounds>) -> ClippableLinear {
        ClippableLinear { linear: linear.into(), clip }
    }

    /// Loads the `linear` map `[out_dim, in_dim]` (see [`Projection::load`]) and, when
    /// `clipped`, the four bounds.
    pub fn load(weights: &Weights, in_dim: i32, out_dim: i32, clipped: bool) -> Result<ClippableLinear> {
        let linear = Projection::load(&weights.pp("linear"), in_dim, out_dim, false)?;
        let clip = if clipped { Some(load_bounds(weights)?) } else { None };
        Ok(ClippableLinear::new(linear, clip))
    }

    /// The wrapped linear map.
    pub fn linear(&self) -> &Projection {
        &self.linear
    }

    /// The clip bounds, when clipping.
    pub fn clip_bounds(&self) -> Option<&ClipBounds> {
        self.clip.as_ref()
    }

    /// `[clip] → linear → [clip]`.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        self.linear.forward_clipped(x, self.clip.as_ref())
    }
}
