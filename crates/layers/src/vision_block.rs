//! [`VisionBlock`]: gemma4's `VisionTransformerBlock`.

use crate::host::{self, HostFloat, with_host_float};
use crate::{Execution, GegluMlp, Result, RmsNorm, RopeTables, VisionAttention, VisionBlockConfig, Weights};
use tensor::Array;

/// One pre/post-norm transformer block of the gemma4 vision encoder
/// (`VisionTransformerBlock.__call__`):
///
/// ```text
/// h   = x + post_attention_layernorm(self_attn(input_layernorm(x), positions, mask))
/// out = h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))
/// ```
///
/// The four norms are [`RmsNorm`]s with eps `rms_norm_eps`. Keys: `self_attn.*`
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
    /// A block from its attention, MLP and norms.
    pub fn new(self_attn: VisionAttention, mlp: GegluMlp, norms: BlockNorms) -> VisionBlock {
        VisionBlock {
            self_attn,
            mlp,
            input_layernorm: norms.input_layernorm,
            post_attention_layernorm: norms.post_attention_layernorm,
            pre_feedforward_layernorm: norms.pre_feedforward_layernorm,
            post_feedforward_layernorm: norms.post_feedforward_layernorm,
            execution: Execution::Mlx,
        }
    }

    /// Loads a block below `weights` (e.g. the prefix `encoder.layers.3`).
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
        ))
    }

    /// The same block computed by `execution`: its attention, MLP, four norms and the two
    /// residual adds.
    pub fn with_execution(self, execution: Execution) -> VisionBlock {
        VisionBlock {
            self_attn: self.self_attn.with_execution(execution),
            mlp: self.mlp.with_execution(execution),
            input_layernorm: self.input_layernorm.with_execution(execution),
            post_attention_layernorm: self.post_attention_layernorm.with_execution(execution),
            pre_feedforward_layernorm: self.pre_feedforward_layernorm.with_execution(execution),
            post_feedforward_layernorm: self.post_feedforward_layernorm.with_execution(execution),
            execution,
        }
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
        let h = self.add(x, &attn_out)?;
        let normed_h = self.pre_feedforward_layernorm.forward(&h)?;
        let ffw_out = self.mlp.forward(&normed_h)?;
        let ffw_out = self.post_feedforward_layernorm.forward(&ffw_out)?;
        self.add(&h, &ffw_out)
    }

    /// The residual add `x + y`: `kernels::elementwise::add` on the host when both have one host
    /// float dtype and one shape, else MLX's `add`.
    fn add(&self, x: &Array, y: &Array) -> Result<Array> {
        if self.execution == Execution::Host
            && x.dtype() == y.dtype()
            && x.shape() == y.shape()
            && let Some(sum) = with_host_float!(x.dtype(), T => add_on_host::<T>(x, y))
        {
            return sum;
        }
        Ok(x.add(y)?)
    }
}

/// `x + y` (one dtype `T`, one shape) by `kernels::elementwise::add`.
fn add_on_host<T: HostFloat>(x: &Array, y: &Array) -> Result<Array> {
    let mut out = host::output::<T>(x.size());
    host::with_two::<T, T, _>(x, y, |a, b| Ok(kernels::elementwise::add(a, b, &mut out)?))?;
    host::record("add");
    host::from_host(out, &x.shape())
}
