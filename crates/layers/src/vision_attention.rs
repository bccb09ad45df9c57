//! [`VisionAttention`]: gemma4's `VisionAttention`.

use crate::host::{self, HostFloat, is_host_float, with_host_float};
use crate::vision_rms_norm::VISION_RMS_NORM_EPS;
use crate::{
    ClippableLinear, Error, Execution, Result, RopeTables, VisionBlockConfig, VisionRmsNorm, Weights, ensure_fused_sdpa,
};
use kernels::attention::{AttentionInputs, AttentionShape, MaskRef, attention};
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
/// `q_norm.weight`, `k_norm.weight` `[D]`.
///
/// With [`Execution::Host`] the projections are host products, the head norms and RoPE one
/// host pass over the projections' token-major layout (`kernels::vision_rms_norm::normalize_heads`),
/// and attention `kernels::attention` (no `[B, H, L, L]` array is materialised); the bits are
/// MLX's CPU bits.
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

/// The queries, keys and values of one forward on the host, `[B·L, heads, D]` each.
struct HostHeads<T> {
    q: Vec<T>,
    k: Vec<T>,
    v: Vec<T>,
}

impl VisionAttention {
    /// An attention block from its weights and `config`'s head layout, computed by MLX.
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
            execution: Execution::Mlx,
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

    /// The same block computed by `execution`.
    pub fn with_execution(self, execution: Execution) -> VisionAttention {
        VisionAttention {
            q_proj: self.q_proj.with_execution(execution),
            k_proj: self.k_proj.with_execution(execution),
            v_proj: self.v_proj.with_execution(execution),
            o_proj: self.o_proj.with_execution(execution),
            execution,
            ..self
        }
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
        let q = self.q_proj.forward(x)?;
        let k = self.k_proj.forward(x)?;
        let v = self.v_proj.forward(x)?;
        if self.execution == Execution::Host
            && let Some(merged) = self.attend_on_host(&q, &k, &v, (b, l), rope, mask)?
        {
            return self.o_proj.forward(&merged);
        }
        let q = q.reshape(&[b, l, self.num_heads, self.head_dim])?;
        let k = k.reshape(&[b, l, self.num_kv_heads, self.head_dim])?;
        let v = v.reshape(&[b, l, self.num_kv_heads, self.head_dim])?;
        let q = rope.apply(&self.q_norm.forward(&q)?)?;
        let k = rope.apply(&self.k_norm.forward(&k)?)?;
        let v = self.v_norm.forward(&v)?;
        let heads_first = [0, 2, 1, 3];
        let (q, k, v) = (q.transpose(&heads_first)?, k.transpose(&heads_first)?, v.transpose(&heads_first)?);
        let attended = ensure_fused_sdpa(&q, &k, &v, 1.0, mask)?;
        let merged = attended.transpose(&heads_first)?.reshape(&[b, l, -1])?;
        self.o_proj.forward(&merged)
    }

    /// The head norms, RoPE and attention of the projections `q`, `k`, `v` `[B, L, heads·D]` on
    /// the host, merged back to `[B, L, Hq·D]`; `None` when their dtypes are not host floats
    /// of one kind (the caller then runs MLX's ops).
    fn attend_on_host(
        &self,
        q: &Array,
        k: &Array,
        v: &Array,
        (b, l): (i32, i32),
        rope: &RopeTables,
        mask: Option<&Array>,
    ) -> Result<Option<Array>> {
        let dtype = q.dtype();
        let norm_dtypes = [&self.q_norm, &self.k_norm].map(|n| n.weight().map_or(Dtype::F32, |w| w.dtype()));
        let mask_fits = mask.is_none_or(|m| is_host_float(m.dtype()) && host::promote(m.dtype(), dtype) == dtype);
        if !is_host_float(dtype) || k.dtype() != dtype || v.dtype() != dtype || !mask_fits {
            return Ok(None);
        }
        if !norm_dtypes.iter().all(|&d| is_host_float(d)) {
            return Ok(None);
        }
        let shape = AttentionShape {
            batch: b as usize,
            query_heads: self.num_heads as usize,
            kv_heads: self.num_kv_heads as usize,
            queries: l as usize,
            keys: l as usize,
            head_dim: self.head_dim as usize,
        };
        let merged = with_host_float!(dtype, T => {
            let heads = self.prepare_heads::<T>(q, k, v, shape, rope)?;
            self.attend::<T>(heads, shape, mask)
        });
        merged.transpose()
    }

    /// `VisionRMSNorm` of q, k (scaled) and v (no scale), then RoPE of q and k, in `T`.
    fn prepare_heads<T: HostFloat>(
        &self,
        q: &Array,
        k: &Array,
        v: &Array,
        shape: AttentionShape,
        rope: &RopeTables,
    ) -> Result<HostHeads<T>> {
        let tables = rope.host_tables::<T>(shape.batch)?;
        let parts = tables.parts()?;
        let d = shape.head_dim;
        let eps = VISION_RMS_NORM_EPS as f32;
        let prepare = |x: &Array, heads: usize, norm: &VisionRmsNorm, rotate: bool| -> Result<Vec<T>> {
            let mut values = host::to_host::<T>(x)?;
            let rope = rotate.then_some(parts.as_slice());
            match norm.weight() {
                Some(w) => with_host_float!(w.dtype(), W => {
                    let weight = host::to_host::<W>(w)?;
                    kernels::vision_rms_norm::normalize_heads(&mut values, heads, d, Some(&weight), eps, rope)
                }),
                None => {
                    Some(kernels::vision_rms_norm::normalize_heads::<T, f32>(&mut values, heads, d, None, eps, rope))
                }
            }
            .ok_or_else(|| host::unsupported("vision attention", &[x.dtype()]))??;
            Ok(values)
        };
        let heads = HostHeads {
            q: prepare(q, shape.query_heads, &self.q_norm, true)?,
            k: prepare(k, shape.kv_heads, &self.k_norm, true)?,
            v: prepare(v, shape.kv_heads, &self.v_norm, false)?,
        };
        host::record("vision_rms_norm+rope");
        Ok(heads)
    }

    /// `kernels::attention` over prepared heads; the output `[B, L, Hq·D]` in `T`.
    fn attend<T: HostFloat>(&self, heads: HostHeads<T>, shape: AttentionShape, mask: Option<&Array>) -> Result<Array> {
        let mut out = host::output::<T>(heads.q.len());
        let run = |mask: Option<MaskRef<'_, T>>, out: &mut [T]| -> Result<()> {
            let HostHeads { q, k, v } = &heads;
            Ok(attention(AttentionInputs { shape, q, k, v, scale: 1.0, mask }, out)?)
        };
        match mask {
            Some(mask) => {
                let (batch, mask_heads) = mask_extents(mask, shape)?;
                let mask = if mask.dtype() == <T as tensor::Element>::DTYPE {
                    mask.clone()
                } else {
                    mask.astype(<T as tensor::Element>::DTYPE)?
                };
                let mask =
                    mask.broadcast_to(&[batch as i32, mask_heads as i32, shape.queries as i32, shape.keys as i32])?;
                host::with_host::<T, _>(&mask, |m| run(Some(MaskRef::new(m, batch, mask_heads)), &mut out))??;
            }
            None => run(None, &mut out)?,
        }
        host::record("attention");
        host::from_host(out, &[shape.batch as i32, shape.queries as i32, (shape.query_heads * shape.head_dim) as i32])
    }
}

/// The batch and head extents (each 1 or the full extent) of an additive mask broadcastable to
/// `[B, Hq, Lq, Lk]`; axes a mask of lower rank lacks broadcast.
fn mask_extents(mask: &Array, shape: AttentionShape) -> Result<(usize, usize)> {
    let dims = mask.shape();
    let extent = |axis: usize| if dims.len() + axis >= 4 { dims[dims.len() + axis - 4] as usize } else { 1 };
    let (batch, heads) = (extent(0), extent(1));
    let fits = |e: usize, full: usize| e == 1 || e == full;
    if dims.len() > 4 || !fits(batch, shape.batch) || !fits(heads, shape.query_heads) {
        return Err(Error::Input {
            block: "vision attention",
            what: format!(
                "mask {dims:?} does not broadcast to [{}, {}, {}, {}]",
                shape.batch, shape.query_heads, shape.queries, shape.keys
            ),
        });
    }
    Ok((batch, heads))
}
