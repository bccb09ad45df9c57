//! [`HostAttention`]: attention computed on the host, for the float32 CPU fast path.

use crate::{AttentionKernel, Error, Result};
use tensor::host::{AttentionMask, AttentionShape, attention};
use tensor::{Array, Dtype};

/// `softmax(scale · q kᵀ + mask) v` computed on the host over the evaluated queries, keys and
/// values by [`tensor::host::attention`]: blocks of query rows spread over the cores, their
/// products register-tiled (AVX2 + FMA) or through the linked BLAS, the softmax with a
/// vectorised exponential.
///
/// MLX's CPU backend evaluates the softmax's exponential one element at a time (about 2 s per
/// layer for 12 heads over 2520 patches); this kernel removes that bottleneck. It evaluates
/// its inputs (one synchronisation per call) and works in float32 (other dtypes are converted
/// in and out). Not bit-identical to [`FusedSdpa`](crate::FusedSdpa); within float32 rounding
/// of it.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostAttention;

impl AttentionKernel for HostAttention {
    fn attend(&self, q: &Array, k: &Array, v: &Array, scale: f32, mask: Option<&Array>) -> Result<Array> {
        let input = |what: String| Error::Input { block: "host attention", what };
        let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
        let (&[b, hq, l, d], &[kb, hkv, lk, kd]) = (qs.as_slice(), ks.as_slice()) else {
            return Err(input(format!("q {qs:?} and k {ks:?} must be [B, H, L, D]")));
        };
        if vs != ks || kb != b || kd != d || hkv == 0 || hq % hkv != 0 {
            return Err(input(format!("q {qs:?}, k {ks:?}, v {vs:?} do not form grouped-query attention")));
        }
        let shape = AttentionShape {
            batch: b as usize,
            query_heads: hq as usize,
            kv_heads: hkv as usize,
            queries: l as usize,
            keys: lk as usize,
            head_dim: d as usize,
        };
        let mask = HostMask::new(mask, shape)?;
        let as_f32 = |x: &Array| -> Result<Array> {
            Ok(if x.dtype() == Dtype::F32 { x.clone() } else { x.astype(Dtype::F32)? })
        };
        // The host kernel reads token-major [B, L, H, D]: for the head-major views of the
        // projections (`VisionAttention`) this transposes back to their own, contiguous layout.
        let tokens_first = [0, 2, 1, 3];
        let (q32, k32, v32) = (
            as_f32(&q.transpose(&tokens_first)?)?,
            as_f32(&k.transpose(&tokens_first)?)?,
            as_f32(&v.transpose(&tokens_first)?)?,
        );
        Array::eval_all(&[&q32, &k32, &v32])?;
        let out = q32.with_slice(|q: &[f32]| {
            k32.with_slice(|k: &[f32]| v32.with_slice(|v: &[f32]| attend_on_host(shape, q, k, v, scale, mask.as_ref())))
        })????;
        let out = Array::from_vec(out, &[b, l, hq, d])?.transpose(&tokens_first)?;
        Ok(if q.dtype() == Dtype::F32 { out } else { out.astype(q.dtype())? })
    }
}

/// An additive attention mask checked against an attention's shape, as evaluated float32.
#[derive(Debug)]
pub(crate) struct HostMask {
    values: Array,
    /// Its batch, head and row extents (1 or the attention's).
    extents: [usize; 3],
}

impl HostMask {
    /// Checks that `mask` is `[1 | B, 1 | Hq, 1 | L, Lk]` for `shape` and evaluates it in float32.
    pub(crate) fn new(mask: Option<&Array>, shape: AttentionShape) -> Result<Option<HostMask>> {
        let Some(mask) = mask else { return Ok(None) };
        let ms = mask.shape();
        let AttentionShape { batch, query_heads, queries, keys, .. } = shape;
        let fits = |extent: i32, full: usize| extent == 1 || usize::try_from(extent) == Ok(full);
        if ms.len() != 4
            || !fits(ms[0], batch)
            || !fits(ms[1], query_heads)
            || !fits(ms[2], queries)
            || usize::try_from(ms[3]) != Ok(keys)
        {
            return Err(Error::Input {
                block: "host attention",
                what: format!("mask {ms:?} does not broadcast to [{batch}, {query_heads}, {queries}, {keys}]"),
            });
        }
        let values = mask.astype(Dtype::F32)?;
        values.eval()?;
        Ok(Some(HostMask { values, extents: [ms[0] as usize, ms[1] as usize, ms[2] as usize] }))
    }
}

/// [`tensor::host::attention`] over token-major float32 `q`, `k`, `v` (see [`AttentionShape`]),
/// returning the token-major output.
pub(crate) fn attend_on_host(
    shape: AttentionShape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    scale: f32,
    mask: Option<&HostMask>,
) -> Result<Vec<f32>> {
    let mut out = vec![0f32; q.len()];
    match mask {
        Some(m) => m.values.with_slice(|values: &[f32]| {
            let [batch, heads, rows] = m.extents;
            attention(shape, q, k, v, scale, Some(AttentionMask { values, batch, heads, rows }), &mut out)
        })??,
        None => attention(shape, q, k, v, scale, None, &mut out)?,
    }
    Ok(out)
}
