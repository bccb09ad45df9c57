//! [`VisionBlock`]: gemma4's `VisionTransformerBlock`.

use crate::{Execution, GegluMlp, Result, RmsNorm, RopeTables, VisionAttention, VisionBlockConfig, Weights, ops};
use tensor::Array;

/// One pre/post-norm transformer block of the gemma4 vision encoder
/// (`VisionTransformerBlock.__call__`):
///
/// ```text
/// h   = x + post_attention_layernorm(self_attn(input_layernorm(x), positions, mask))
/// out = h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))
/// ```
///
/// The four norms are [`RmsNorm`]s with eps `rms_norm_eps`; the residual adds [`ops::add`] with
/// the block's [`Execution`]. Keys: `self_attn.*`
/// ([`VisionAttention`]), `mlp.*` ([`GegluMlp`]), `input_layernorm.weight`,
/// `post_attention_layernorm.weight`, `pre_feedforward_layernorm.weight`,
/// `post_feedforward_layernorm.weight` `[hidden]`.
#[derive(Debug, Clone)]
pub struct VisionBlock {
    self_attn: VisionAttention,
    mlp: GegluMlp,
    input_layernorm: RmsNorm,
    post_attention_layernorm: RmsNorm,
    pre_feedforward_layernorm: RmsNorm,
    post_feedforward_layernorm: RmsNorm,
    execution: Execution,
}

/// The four norms of a [`VisionBlock`], for [`VisionBlock::new`].
#[derive(Debug, Clone)]
pub struct BlockNorms {
    pub input_layernorm: RmsNorm,
    pub post_attention_layernorm: RmsNorm,
    pub pre_feedforward_layernorm: RmsNorm,
    pub post_feedforward_layernorm: RmsNorm,
}

impl VisionBlock {
    /// A block from its attention, MLP and norms, its residual adds computed by `execution`.
    pub fn new(self_attn: VisionAttention, mlp: GegluMlp, norms: BlockNorms, execution: Execution) -> VisionBlock {
        VisionBlock {
            self_attn,
            mlp,
            input_layernorm: norms.input_layernorm,
            post_attention_layernorm: norms.post_attention_layernorm,
            pre_feedforward_layernorm: norms.pre_feedforward_layernorm,
            post_feedforward_layernorm: norms.post_feedforward_layernorm,
            execution,
        }
    }

    /// Loads a block below `weights` (e.g. the prefix `encoder.layers.3`); computed by the view's
    /// execution.
    pub fn load(weights: &Weights, config: &VisionBlockConfig) -> Result<VisionBlock> {
        config.validate()?;
        let (dim, eps) = (config.hidden_size, config.rms_norm_eps as f32);
        let norm = |name: &str| RmsNorm::load(&weights.pp(name), dim, eps);
        Ok(VisionBlock::new(
            VisionAttention::load(&weights.pp("self_attn"), config)?,
            GegluMlp::load(&weights.pp("mlp"), config.hidden_size, config.intermediate_size, config.clipped_linears)?,
            BlockNorms {
                input_layernorm: norm("input_layernorm")?,
                post_attention_layernorm: norm("post_attention_layernorm")?,
                pre_feedforward_layernorm: norm("pre_feedforward_layernorm")?,
                post_feedforward_layernorm: norm("post_feedforward_layernorm")?,
            },
            weights.execution(),
        ))
    }

    /// The attention sub-block.
    pub fn self_attn(&self) -> &VisionAttention {
        &self.self_attn
    }

    /// The MLP sub-block.
    pub fn mlp(&self) -> &GegluMlp {
        &self.mlp
    }

    /// `x` `[B, L, hidden]` → `[B, L, hidden]`; see [`VisionAttention::forward`] for `rope` and `mask`.
    pub fn forward(&self, x: &Array, rope: &RopeTables, mask: Option<&Array>) -> Result<Array> {
        let normed = self.input_layernorm.forward(x)?;
        let attn_out = self.self_attn.forward(&normed, rope, mask)?;
        let attn_out = self.post_attention_layernorm.forward(&attn_out)?;
        let h = ops::add(self.execution, x, &attn_out)?;
        let normed_h = self.pre_feedforward_layernorm.forward(&h)?;
        let ffw_out = self.mlp.forward(&normed_h)?;
        let ffw_out = self.post_feedforward_layernorm.forward(&ffw_out)?;
        ops::add(self.execution, &h, &ffw_out)
    }
}
