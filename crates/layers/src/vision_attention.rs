//! [`VisionAttention`]: gemma4's `VisionAttention`.

use crate::host_attention::{HostMask, attend_on_host};
use crate::host_heads::{HeadPrep, prepare_heads};
use crate::rope::HostRope;
use crate::vision_rms_norm::VISION_RMS_NORM_EPS;
use crate::{
    Arithmetic, AttentionKernel, ClippableLinear, Error, FusedSdpa, HostAttention, Result, RopeTables,
    VisionBlockConfig, VisionRmsNorm, Weights,
};
use std::sync::Arc;
use tensor::host::AttentionShape;
use tensor::{Array, Dtype};

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
/// `q_norm.weight`, `k_norm.weight` `[D]`. The attention itself runs through an
/// [`AttentionKernel`], [`FusedSdpa`] unless replaced with [`with_kernel`](VisionAttention::with_kernel).
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
    kernel: Arc<dyn AttentionKernel>,
    fused_head_norms: bool,
    /// Norms, RoPE and attention on the host ([`Arithmetic::HostFloat32`] without another kernel).
    host_heads: bool,
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
    /// An attention block from its weights and `config`'s head layout, with the [`FusedSdpa`] kernel.
    pub fn new(weights: AttentionWeights, config: &VisionBlockConfig) -> Result<VisionAttention> {
        config.validate()?;
        Ok(VisionAttention {
            q_proj: weights.q_proj,
            k_proj: weights.k_proj,
            v_proj: weights.v_proj,
            o_proj: weights.o_proj,
            q_norm: weights.q_norm,
            k_norm: weights.k_norm,
            v_norm: VisionRmsNorm::no_scale(),
            num_heads: config.num_heads,
            num_kv_heads: config.num_kv_heads,
            head_dim: config.head_dim,
            hidden_size: config.hidden_size,
            kernel: Arc::new(FusedSdpa),
            fused_head_norms: false,
            host_heads: false,
        })
    }

    /// Loads the four projections and the q/k norms.
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
        VisionAttention::new(parts, config)
    }

    /// The same block computing attention with `kernel`.
    pub fn with_kernel(mut self, kernel: Arc<dyn AttentionKernel>) -> VisionAttention {
        self.kernel = kernel;
        self.host_heads = false;
        self
    }

    /// The same block computing `arithmetic`: [`Arithmetic::Reference`] restores the
    /// [`FusedSdpa`] kernel and the reference's q/k/v norms; [`Arithmetic::HostFloat32`] selects
    /// [`HostAttention`], with the q/k/v norms and RoPE computed on the host as well (in
    /// float32, over every core, straight from the projections' layout).
    pub fn with_arithmetic(self, arithmetic: Arithmetic) -> VisionAttention {
        let (kernel, fused): (Arc<dyn AttentionKernel>, bool) = match arithmetic {
            Arithmetic::Reference => (Arc::new(FusedSdpa), false),
            Arithmetic::HostFloat32 => (Arc::new(HostAttention), true),
        };
        VisionAttention { fused_head_norms: fused, host_heads: fused, ..self.with_kernel(kernel) }
    }

    /// The attention kernel in use.
    pub fn kernel(&self) -> &Arc<dyn AttentionKernel> {
        &self.kernel
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
        if self.host_heads {
            return self.forward_on_host(x, rope, mask);
        }
        let q = self.q_proj.forward(x)?.reshape(&[b, l, self.num_heads, self.head_dim])?;
        let k = self.k_proj.forward(x)?.reshape(&[b, l, self.num_kv_heads, self.head_dim])?;
        let v = self.v_proj.forward(x)?.reshape(&[b, l, self.num_kv_heads, self.head_dim])?;
        let norm = |n: &VisionRmsNorm, x: &Array| if self.fused_head_norms { n.forward_fused(x) } else { n.forward(x) };
        let q = norm(&self.q_norm, &q)?;
        let k = norm(&self.k_norm, &k)?;
        let v = norm(&self.v_norm, &v)?;
        let q = rope.apply(&q)?;
        let k = rope.apply(&k)?;
        let heads_first = [0, 2, 1, 3];
        let (q, k, v) = (q.transpose(&heads_first)?, k.transpose(&heads_first)?, v.transpose(&heads_first)?);
        let attended = self.kernel.attend(&q, &k, &v, 1.0, mask)?;
        let merged = attended.transpose(&heads_first)?.reshape(&[b, l, -1])?;
        self.o_proj.forward(&merged)
    }

    /// [`forward`](Self::forward) with the projections evaluated, then the q/k/v norms, RoPE
    /// and attention computed on the host in float32 (`host_heads`), and the output projected
    /// by MLX again.
    fn forward_on_host(&self, x: &Array, rope: &RopeTables, mask: Option<&Array>) -> Result<Array> {
        let shape = x.shape();
        let (b, l) = (shape[0], shape[1]);
        let attention_shape = AttentionShape {
            batch: b as usize,
            query_heads: self.num_heads as usize,
            kv_heads: self.num_kv_heads as usize,
            queries: l as usize,
            keys: l as usize,
            head_dim: self.head_dim as usize,
        };
        let mask = HostMask::new(mask, attention_shape)?;
        let project = |p: &ClippableLinear| -> Result<Array> { Ok(p.forward(x)?.astype(Dtype::F32)?) };
        let (q, k, v) = (project(&self.q_proj)?, project(&self.k_proj)?, project(&self.v_proj)?);
        Array::eval_all(&[&q, &k, &v])?;
        let host_rope = rope.host()?;
        if host_rope.len != l as usize || (host_rope.batch != 1 && host_rope.batch != b as usize) {
            return Err(Error::Input {
                block: "vision attention",
                what: format!("RoPE tables for [{}, {}] positions, input [{b}, {l}]", host_rope.batch, host_rope.len),
            });
        }
        let weight = |n: &VisionRmsNorm| -> Result<Option<Vec<f32>>> {
            n.weight().map(|w| Ok(w.astype(Dtype::F32)?.to_vec::<f32>()?)).transpose()
        };
        let (q_weight, k_weight, v_weight) = (weight(&self.q_norm)?, weight(&self.k_norm)?, weight(&self.v_norm)?);
        let eps = VISION_RMS_NORM_EPS as f32;
        let d = self.head_dim as usize;
        let prepare = |x: &Array, heads: i32, weight: Option<&[f32]>, rope: Option<&HostRope>| -> Result<Vec<f32>> {
            let mut out = vec![0f32; x.size()];
            x.with_slice(|x: &[f32]| prepare_heads(x, heads as usize, d, HeadPrep { weight, eps, rope }, &mut out))?;
            Ok(out)
        };
        let q = prepare(&q, self.num_heads, q_weight.as_deref(), Some(host_rope))?;
        let k = prepare(&k, self.num_kv_heads, k_weight.as_deref(), Some(host_rope))?;
        let v = prepare(&v, self.num_kv_heads, v_weight.as_deref(), None)?;
        let attended = attend_on_host(attention_shape, &q, &k, &v, 1.0, mask.as_ref())?;
        let merged = Array::from_vec(attended, &[b, l, self.num_heads * self.head_dim])?;
        let merged = if x.dtype() == Dtype::F32 { merged } else { merged.astype(x.dtype())? };
        self.o_proj.forward(&merged)
    }
}
