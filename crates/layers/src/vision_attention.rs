//! [`VisionAttention`]: gemma4's `VisionAttention`.

use crate::{ClippableLinear, Error, Execution, Result, RopeTables, VisionBlockConfig, VisionRmsNorm, Weights, ops};
use tensor::Array;

/// Multi-head self-attention of the gemma4 vision encoder (`VisionAttention.__call__`):
///
/// ```text
/// q = q_proj(x).reshape(B, L, Hq, D);  k, v = k_proj(x), v_proj(x) reshaped to (B, L, Hkv, D)
/// q = VisionRMSNorm(q, q_norm);  k = VisionRMSNorm(k, k_norm);  v = VisionRMSNormNoScale(v)
/// q, k = rope(q), rope(k)                                  # 2-D RoPE, tables shared by all layers
/// o = ensure_fused_sdpa(q, k, v transposed to (B, H, L, D), scale=1.0, mask)
/// o_proj(o.transpose(0, 2, 1, 3).reshape(B, L, Hq·D))
/// ```
///
/// Keys: `q_proj.*`, `k_proj.*`, `v_proj.*`, `o_proj.*` ([`ClippableLinear`]),
/// `q_norm.weight`, `k_norm.weight` `[D]`.
///
/// The head norms with RoPE are [`VisionRmsNorm::forward_rotated`] and the attention
/// [`ops::sdpa`] with the block's [`Execution`] (on the host: one pass over the projections'
/// token-major layout, and no `[B, H, L, L]` array materialised).
#[derive(Debug, Clone)]
pub struct VisionAttention {
    q_proj: ClippableLinear,
    k_proj: ClippableLinear,
    v_proj: ClippableLinear,
    o_proj: ClippableLinear,
    q_norm: VisionRmsNorm,
    k_norm: VisionRmsNorm,
    v_norm: VisionRmsNorm,
    num_heads: i32,
    num_kv_heads: i32,
    head_dim: i32,
    hidden_size: i32,
    execution: Execution,
}

/// The projections and norms of a [`VisionAttention`], for [`VisionAttention::new`].
#[derive(Debug, Clone)]
pub struct AttentionWeights {
    pub q_proj: ClippableLinear,
    pub k_proj: ClippableLinear,
    pub v_proj: ClippableLinear,
    pub o_proj: ClippableLinear,
    /// Scaled [`VisionRmsNorm`] of the queries.
    pub q_norm: VisionRmsNorm,
    /// Scaled [`VisionRmsNorm`] of the keys.
    pub k_norm: VisionRmsNorm,
}

impl VisionAttention {
    /// An attention block from its weights and `config`'s head layout, its head norms and
    /// attention computed by `execution`.
    pub fn new(weights: AttentionWeights, config: &VisionBlockConfig, execution: Execution) -> Result<VisionAttention> {
        config.validate()?;
        Ok(VisionAttention {
            q_proj: weights.q_proj,
            k_proj: weights.k_proj,
            v_proj: weights.v_proj,
            o_proj: weights.o_proj,
            q_norm: weights.q_norm,
            k_norm: weights.k_norm,
            v_norm: VisionRmsNorm::no_scale(execution),
            num_heads: config.num_heads,
            num_kv_heads: config.num_kv_heads,
            head_dim: config.head_dim,
            hidden_size: config.hidden_size,
            execution,
        })
    }

    /// Loads the four projections and the q/k norms; computed by the view's execution.
    pub fn load(weights: &Weights, config: &VisionBlockConfig) -> Result<VisionAttention> {
        config.validate()?;
        let (hidden, clipped) = (config.hidden_size, config.clipped_linears);
        let q_out = config.num_heads * config.head_dim;
        let kv_out = config.num_kv_heads * config.head_dim;
        let parts = AttentionWeights {
            q_proj: ClippableLinear::load(&weights.pp("q_proj"), hidden, q_out, clipped)?,
            k_proj: ClippableLinear::load(&weights.pp("k_proj"), hidden, kv_out, clipped)?,
            v_proj: ClippableLinear::load(&weights.pp("v_proj"), hidden, kv_out, clipped)?,
            o_proj: ClippableLinear::load(&weights.pp("o_proj"), q_out, hidden, clipped)?,
            q_norm: VisionRmsNorm::load(&weights.pp("q_norm"), config.head_dim)?,
            k_norm: VisionRmsNorm::load(&weights.pp("k_norm"), config.head_dim)?,
        };
        VisionAttention::new(parts, config, weights.execution())
    }

    /// Attends `x` `[B, L, hidden]` to itself. `rope` holds the tables of the `L` positions;
    /// `mask` is additive, broadcastable to `[B, Hq, L, L]` (gemma4: `[B, 1, L, L]`, 0 or -1e4).
    pub fn forward(&self, x: &Array, rope: &RopeTables, mask: Option<&Array>) -> Result<Array> {
        let (b, l) = match x.shape().as_slice() {
            &[b, l, hidden] if hidden == self.hidden_size => (b, l),
            other => {
                return Err(Error::Input {
                    block: "vision attention",
                    what: format!("input must be [B, L, {}], found {other:?}", self.hidden_size),
                });
            }
        };
        let q = self.q_proj.forward(x)?.reshape(&[b, l, self.num_heads, self.head_dim])?;
        let k = self.k_proj.forward(x)?.reshape(&[b, l, self.num_kv_heads, self.head_dim])?;
        let v = self.v_proj.forward(x)?.reshape(&[b, l, self.num_kv_heads, self.head_dim])?;
        let q = self.q_norm.forward_rotated(&q, rope)?;
        let k = self.k_norm.forward_rotated(&k, rope)?;
        let v = self.v_norm.forward(&v)?;
        self.o_proj.forward(&ops::sdpa(self.execution, &q, &k, &v, 1.0, mask)?)
    }
}
