//! MLX's fused kernels (`mlx.core.fast`).

use crate::array::ABSENT;
use crate::status::api;
use crate::{Array, Result};
use std::ffi::CString;

/// RMS normalisation over the last axis: `x * rsqrt(mean(x²) + eps) * weight`, fused.
/// The output dtype is the promotion of `x`'s and `weight`'s.
#[track_caller]
pub fn rms_norm(x: &Array, weight: Option<&Array>, eps: f32) -> Result<Array> {
    let stream = crate::device::current_stream()?;
    // SAFETY: the op-call contract of `Array::from_op`: the live `x`, and `weight` live or the null
    // handle mlx-c documents as "no weight"; this thread's `stream`.
    Array::from_op("fast.rms_norm", |out| unsafe {
        api().mlx_fast_rms_norm(out, x.as_raw(), Array::raw_or_absent(weight), eps, stream)
    })
}

/// Layer normalisation over the last axis with optional affine `weight` and `bias`, fused.
#[track_caller]
pub fn layer_norm(x: &Array, weight: Option<&Array>, bias: Option<&Array>, eps: f32) -> Result<Array> {
    let stream = crate::device::current_stream()?;
    // SAFETY: the op-call contract of `Array::from_op`: the live `x`, and `weight` and `bias` each
    // live or the null handle mlx-c documents as "absent"; this thread's `stream`.
    Array::from_op("fast.layer_norm", |out| unsafe {
        api().mlx_fast_layer_norm(
            out,
            x.as_raw(),
            Array::raw_or_absent(weight),
            Array::raw_or_absent(bias),
            eps,
            stream,
        )
    })
}

/// The mask argument of [`scaled_dot_product_attention`].
#[derive(Debug, Clone, Copy)]
pub enum AttentionMask<'a> {
    /// Every query attends to every key.
    None,
    /// Causal (lower-triangular) masking.
    Causal,
    /// An additive float mask (or a boolean keep-mask) broadcastable to `[B, H, Lq, Lk]`.
    Array(&'a Array),
}

/// `softmax(scale · q kᵀ + mask) v` over `q: [B, Hq, Lq, D]`, `k, v: [B, Hkv, Lk, D]`; grouped
/// query attention when `Hkv` divides `Hq`.
#[track_caller]
pub fn scaled_dot_product_attention(
    q: &Array,
    k: &Array,
    v: &Array,
    scale: f32,
    mask: AttentionMask<'_>,
) -> Result<Array> {
    let (mode, mask_array) = match mask {
        AttentionMask::None => ("", ABSENT),
        AttentionMask::Causal => ("causal", ABSENT),
        AttentionMask::Array(m) => ("array", m.as_raw()),
    };
    let mode = CString::new(mode).unwrap_or_default();
    let stream = crate::device::current_stream()?;
    // SAFETY: the op-call contract of `Array::from_op`: the live `q`, `k` and `v`; the `CString`
    // `mode`; `mask_array` live (borrowed through `mask`) or null, as mlx-c documents for "no mask
    // array", and null for "no sinks"; this thread's `stream`.
    Array::from_op("fast.scaled_dot_product_attention", |out| unsafe {
        api().mlx_fast_scaled_dot_product_attention(
            out,
            q.as_raw(),
            k.as_raw(),
            v.as_raw(),
            scale,
            mode.as_ptr(),
            mask_array,
            ABSENT,
            false,
            stream,
        )
    })
}
