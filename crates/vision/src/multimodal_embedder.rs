//! `MultimodalEmbedder`: vision features into the language model's embedding space.

use crate::Result;
use layers::{Execution, Projection, RmsNorm, Weights};
use tensor::Array;

/// mlx-vlm's `MultimodalEmbedder` (gemma4, shared by gemma4_unified): a scale-free fused RMS
/// norm (`fast.rms_norm(x, None, eps)`) followed by `embedding_projection` (`x @ W.T`,
/// `W` `[text_hidden, width]`; quantized checkpoints: `quantized_matmul`, see [`Projection`]).
/// Keys below `embed_vision`: `embedding_projection.weight` (quantized: also `.scales`,
/// `.biases`).
#[derive(Debug, Clone)]
pub struct MultimodalEmbedder {
    norm: RmsNorm,
    projection: Projection,
}

impl MultimodalEmbedder {
    /// The embedder of `projection`, its norm computed by `execution`.
    pub fn new(projection: impl Into<Projection>, eps: f32, execution: Execution) -> MultimodalEmbedder {
        MultimodalEmbedder { norm: RmsNorm::no_scale(eps, execution), projection: projection.into() }
    }

    /// Loads `embedding_projection` `[text_hidden, width]`; computed by the view's execution.
    pub fn load(weights: &Weights, width: i32, text_hidden: i32, eps: f32) -> Result<MultimodalEmbedder> {
        let projection = Projection::load(&weights.pp("embedding_projection"), width, text_hidden, false)?;
        Ok(MultimodalEmbedder::new(projection, eps, weights.execution()))
    }

    /// The projection, dense or quantized.
    pub fn projection(&self) -> &Projection {
        &self.projection
    }

    /// `[…, width]` → `[…, text_hidden]`.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        Ok(self.projection.forward(&self.norm.forward(x)?)?)
    }
}
