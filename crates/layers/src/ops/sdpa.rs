//! [`sdpa`]: the reference's attention over token-major heads.

use super::dispatch::{self, HostDtype, Op, with_host_dtype};
use super::ensure_fused_sdpa;
use super::host::{self, HostFloat};
use super::host_kernel::HostKernel;
use crate::{Error, Execution, Result};
use kernels::attention::{AttentionInputs, AttentionShape, MaskRef, attention};
use tensor::{Array, Element};

/// Attention of queries `q` `[B, Lq, Hq, D]` over keys and values `k`, `v` `[B, Lk, Hkv, D]`
/// (token-major, as the projections leave them; `Hkv` divides `Hq`), with an additive `mask`
/// broadcastable to `[B, Hq, Lq, Lk]`, merged back to `[B, Lq, Hq · D]`, as gemma4's
/// `VisionAttention` runs it:
///
/// ```text
/// q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
/// o = ensure_fused_sdpa(q, k, v, scale, mask)
/// o.transpose(0, 2, 1, 3).reshape(B, Lq, Hq · D)
/// ```
///
/// On the host, `kernels::attention` (MLX's CPU SDPA bits) when `q`, `k`, `v` share a host float
/// dtype and the mask's promotes to it; no `[B, H, Lq, Lk]` array is materialised.
pub fn sdpa(execution: Execution, q: &Array, k: &Array, v: &Array, scale: f32, mask: Option<&Array>) -> Result<Array> {
    dispatch::run(execution, Sdpa { q, k, v, scale, mask })
}

struct Sdpa<'a> {
    q: &'a Array,
    k: &'a Array,
    v: &'a Array,
    scale: f32,
    mask: Option<&'a Array>,
}

impl Op for Sdpa<'_> {
    /// The extents, and the mask's batch and head extents.
    type Checked = (AttentionShape, Option<(usize, usize)>);
    /// The dtype of `q`, `k`, `v`, the mask's promotion to it, and the output.
    type Plan = HostDtype;

    fn check(&self) -> Result<Self::Checked> {
        let shape = attention_shape(self.q, self.k, self.v)?;
        Ok((shape, self.mask.map(|m| mask_extents(m, shape)).transpose()?))
    }

    fn plan(&self) -> Option<HostDtype> {
        let dtype = self.q.dtype();
        let mask_fits = self.mask.is_none_or(|m| HostDtype::promote(&[m.dtype(), dtype]) == HostDtype::of(dtype));
        (self.k.dtype() == dtype && self.v.dtype() == dtype && mask_fits).then(|| HostDtype::of(dtype)).flatten()
    }

    fn kernel(&self, _: &HostDtype) -> HostKernel {
        HostKernel::Attention
    }

    fn on_host(&self, (shape, mask_extents): Self::Checked, dtype: HostDtype) -> Result<Array> {
        with_host_dtype!(dtype, T => self.attention::<T>(shape, mask_extents))
    }

    fn on_mlx(&self) -> Result<Array> {
        let heads_first = [0, 2, 1, 3];
        let (q, k, v) =
            (self.q.transpose(&heads_first)?, self.k.transpose(&heads_first)?, self.v.transpose(&heads_first)?);
        let attended = ensure_fused_sdpa(&q, &k, &v, self.scale, self.mask)?;
        let (batch, queries) = (self.q.dim(0)?, self.q.dim(1)?);
        Ok(attended.transpose(&heads_first)?.reshape(&[batch, queries, -1])?)
    }
}

/// The extents of `q` `[B, Lq, Hq, D]`, `k`, `v` `[B, Lk, Hkv, D]`.
fn attention_shape(q: &Array, k: &Array, v: &Array) -> Result<AttentionShape> {
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    match (qs.as_slice(), ks.as_slice()) {
        (&[b, lq, hq, d], &[bk, lk, hkv, dk])
            if b == bk && d == dk && vs == ks && hkv > 0 && hq % hkv == 0 && [b, lq, lk, d].iter().all(|&e| e >= 0) =>
        {
            Ok(AttentionShape {
                batch: b as usize,
                query_heads: hq as usize,
                kv_heads: hkv as usize,
                queries: lq as usize,
                keys: lk as usize,
                head_dim: d as usize,
            })
        }
        _ => Err(Error::Input {
            block: "sdpa",
            what: format!("q {qs:?}, k {ks:?}, v {vs:?} are not [B, Lq, Hq, D] and [B, Lk, Hkv, D] with Hkv | Hq"),
        }),
    }
}

impl Sdpa<'_> {
    /// `kernels::attention` in `T`; the output `[B, Lq, Hq · D]`.
    fn attention<T: HostFloat>(&self, shape: AttentionShape, mask_extents: Option<(usize, usize)>) -> Result<Array> {
        let (q, k, v, scale) = (self.q, self.k, self.v, self.scale);
        let out_shape = [shape.batch as i32, shape.queries as i32, (shape.query_heads * shape.head_dim) as i32];
        let mut out = host::output::<T>(&out_shape)?;
        let run = |mask: Option<MaskRef<'_, T>>, out: &mut [T]| -> Result<()> {
            host::with_host::<T, _>(q, |q| {
                host::with_two::<T, T, _>(k, v, |k, v| {
                    Ok(attention(AttentionInputs { shape, q, k, v, scale, mask }, out)?)
                })
            })?
        };
        match self.mask.zip(mask_extents) {
            Some((mask, (batch, mask_heads))) => {
                let dtype = <T as Element>::DTYPE;
                let mask = if mask.dtype() == dtype { mask.clone() } else { mask.astype(dtype)? };
                let mask =
                    mask.broadcast_to(&[batch as i32, mask_heads as i32, shape.queries as i32, shape.keys as i32])?;
                host::with_host::<T, _>(&mask, |m| run(Some(MaskRef::new(m, batch, mask_heads)), &mut out))??;
            }
            None => run(None, &mut out)?,
        }
        Ok(out.into_array())
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
            block: "sdpa",
            what: format!(
                "mask {dims:?} does not broadcast to [{}, {}, {}, {}]",
                shape.batch, shape.query_heads, shape.queries, shape.keys
            ),
        });
    }
    Ok((batch, heads))
}
