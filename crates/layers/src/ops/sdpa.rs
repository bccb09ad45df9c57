//! [`sdpa`]: the reference's attention over token-major heads.

use crate::host::{self, HostFloat, host_dtype, promote, with_host_float};
use crate::{Error, Execution, HostKernel, Result, ensure_fused_sdpa, host_kernel};
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
    let shape = attention_shape(q, k, v)?;
    let dtype = q.dtype();
    let mask_fits = mask.is_none_or(|m| promote(&[m.dtype(), dtype]) == Some(dtype));
    if k.dtype() == dtype
        && v.dtype() == dtype
        && mask_fits
        && host_dtype(execution, &[dtype]).is_some()
        && let Some(out) = with_host_float!(dtype, T => on_host::<T>(q, k, v, shape, scale, mask))
    {
        return out;
    }
    let heads_first = [0, 2, 1, 3];
    let (qt, kt, vt) = (q.transpose(&heads_first)?, k.transpose(&heads_first)?, v.transpose(&heads_first)?);
    let attended = ensure_fused_sdpa(&qt, &kt, &vt, scale, mask)?;
    Ok(attended.transpose(&heads_first)?.reshape(&[shape.batch as i32, shape.queries as i32, -1])?)
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

/// `kernels::attention` in `T`; the output `[B, Lq, Hq · D]`.
fn on_host<T: HostFloat>(
    q: &Array,
    k: &Array,
    v: &Array,
    shape: AttentionShape,
    scale: f32,
    mask: Option<&Array>,
) -> Result<Array> {
    let mut out = host::output::<T>(q.size());
    let run = |mask: Option<MaskRef<'_, T>>, out: &mut [T]| -> Result<()> {
        host::with_host::<T, _>(q, |q| {
            host::with_two::<T, T, _>(k, v, |k, v| Ok(attention(AttentionInputs { shape, q, k, v, scale, mask }, out)?))
        })?
    };
    match mask {
        Some(mask) => {
            let (batch, mask_heads) = mask_extents(mask, shape)?;
            let dtype = <T as Element>::DTYPE;
            let mask = if mask.dtype() == dtype { mask.clone() } else { mask.astype(dtype)? };
            let mask =
                mask.broadcast_to(&[batch as i32, mask_heads as i32, shape.queries as i32, shape.keys as i32])?;
            host::with_host::<T, _>(&mask, |m| run(Some(MaskRef::new(m, batch, mask_heads)), &mut out))??;
        }
        None => run(None, &mut out)?,
    }
    host_kernel::record(HostKernel::Attention);
    host::from_host(out, &[shape.batch as i32, shape.queries as i32, (shape.query_heads * shape.head_dim) as i32])
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
