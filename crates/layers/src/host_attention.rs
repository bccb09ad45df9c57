//! [`HostAttention`]: attention computed on the host, for the float32 CPU fast path.

use crate::{AttentionKernel, Error, Result};
use tensor::host::{Matrix, MatrixMut, sgemm, softmax_rows};
use tensor::{Array, Dtype};

/// `softmax(scale · q kᵀ + mask) v` computed on the host over the evaluated queries, keys and
/// values: per head, `q kᵀ` and `p v` through the linked BLAS and the softmax with a
/// vectorised exponential (`tensor::host`).
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
        let (q32, k32, v32) = (as_f32(q)?, as_f32(k)?, as_f32(v)?);
        let mut arrays = vec![&q32, &k32, &v32];
        arrays.extend(mask.as_ref().map(|(m, _)| m));
        Array::eval_all(&arrays)?;
        let dims =
            Dims { b: b as usize, hq: hq as usize, hkv: hkv as usize, l: l as usize, lk: lk as usize, d: d as usize };
        let mut out = vec![0f32; dims.b * dims.hq * dims.l * dims.d];
        q32.with_slice(|q: &[f32]| {
            k32.with_slice(|k: &[f32]| {
                v32.with_slice(|v: &[f32]| match &mask {
                    Some((m, shape)) => {
                        m.with_slice(|m: &[f32]| attend_heads(dims, q, k, v, scale, Some((m, shape)), &mut out))?
                    }
                    None => attend_heads(dims, q, k, v, scale, None, &mut out),
                })
            })
        })????;
        let out = Array::from_vec(out, &[b, hq, l, d])?;
        Ok(if q.dtype() == Dtype::F32 { out } else { out.astype(q.dtype())? })
    }
}

/// Extents of one attention call: batch, query heads, key/value heads, query and key lengths,
/// head dimension.
#[derive(Debug, Clone, Copy)]
struct Dims {
    b: usize,
    hq: usize,
    hkv: usize,
    l: usize,
    lk: usize,
    d: usize,
}

/// Attention over row-major float32 `q` `[b, hq, l, d]`, `k`, `v` `[b, hkv, lk, d]` and an
/// optional additive mask `[mb, mh, ml, lk]` (extents 1 or full), into `out` `[b, hq, l, d]`.
fn attend_heads(
    dims: Dims,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    scale: f32,
    mask: Option<(&[f32], &Vec<i32>)>,
    out: &mut [f32],
) -> Result<()> {
    let Dims { b, hq, hkv, l, lk, d } = dims;
    let group = hq / hkv;
    let mut scores = vec![0f32; l * lk];
    for batch in 0..b {
        for head in 0..hq {
            let q_at = (batch * hq + head) * l * d;
            let kv_at = (batch * hkv + head / group) * lk * d;
            let qh = Matrix::new(&q[q_at..q_at + l * d], l, d, d)?;
            let kh = Matrix::new(&k[kv_at..kv_at + lk * d], lk, d, d)?;
            let vh = Matrix::new(&v[kv_at..kv_at + lk * d], lk, d, d)?;
            sgemm(1.0, qh, kh.t(), 0.0, MatrixMut::new(&mut scores, l, lk, lk)?)?;
            let mask_rows = mask.map(|(m, shape)| {
                let (mb, mh, ml) = (shape[0] as usize, shape[1] as usize, shape[2] as usize);
                let at = ((batch % mb) * mh + head % mh) * ml * lk;
                (&m[at..at + ml * lk], ml)
            });
            softmax_rows(&mut scores, lk, scale, mask_rows)?;
            let probabilities = Matrix::new(&scores, l, lk, lk)?;
            sgemm(1.0, probabilities, vh, 0.0, MatrixMut::new(&mut out[q_at..q_at + l * d], l, d, d)?)?;
        }
    }
    Ok(())
}
