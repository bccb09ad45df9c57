//! [`HostAttention`]: attention computed on the host, for the float32 CPU fast path.

use crate::{AttentionKernel, Error, Result};
use tensor::host::{AttentionMask, AttentionShape, attention};
use tensor::{Array, Dtype};

/// `softmax(scale · q kᵀ + mask) v` computed on the host over the evaluated queries, keys and
/// values by [`tensor::host::attention`]: blocks of query rows spread over the cores, their
/// scores through the linked BLAS, the softmax with a vectorised exponential.
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
        let mask = match mask {
            None => None,
            Some(m) => {
                let ms = m.shape();
                let fits = ms.len() == 4
                    && (ms[0] == 1 || ms[0] == b)
                    && (ms[1] == 1 || ms[1] == hq)
                    && (ms[2] == 1 || ms[2] == l)
                    && ms[3] == lk;
                if !fits {
                    return Err(input(format!("mask {ms:?} does not broadcast to [{b}, {hq}, {l}, {lk}]")));
                }
                Some((m.astype(Dtype::F32)?, ms))
            }
        };
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
        let mut arrays = vec![&q32, &k32, &v32];
        arrays.extend(mask.as_ref().map(|(m, _)| m));
        Array::eval_all(&arrays)?;
        let shape = AttentionShape {
            batch: b as usize,
            query_heads: hq as usize,
            kv_heads: hkv as usize,
            queries: l as usize,
            keys: lk as usize,
            head_dim: d as usize,
        };
        let mut out = vec![0f32; shape.batch * shape.query_heads * shape.queries * shape.head_dim];
        q32.with_slice(|q: &[f32]| {
            k32.with_slice(|k: &[f32]| {
                v32.with_slice(|v: &[f32]| match &mask {
                    Some((m, ms)) => m.with_slice(|values: &[f32]| {
                        let mask = AttentionMask {
                            values,
                            batch: ms[0] as usize,
                            heads: ms[1] as usize,
                            rows: ms[2] as usize,
                        };
                        attention(shape, q, k, v, scale, Some(mask), &mut out)
                    })?,
                    None => attention(shape, q, k, v, scale, None, &mut out),
                })
            })
        })????;
        let out = Array::from_vec(out, &[b, l, hq, d])?.transpose(&tokens_first)?;
        Ok(if q.dtype() == Dtype::F32 { out } else { out.astype(q.dtype())? })
    }
}
