//! [`ensure_fused_sdpa`]: the reference's attention on MLX.

use crate::Result;
use tensor::Array;
use tensor::fast::{self, AttentionMask};

/// Head dimensions MLX's fused SDPA kernels serve; smaller heads are zero-padded up to the first
/// that fits (`models.base.ensure_fused_sdpa`).
pub const FUSED_HEAD_DIMS: [i32; 3] = [64, 80, 128];

/// `mlx_vlm.models.base.ensure_fused_sdpa`: with `D` the head dimension and `T` the first of
/// [`FUSED_HEAD_DIMS`] `≥ D` (or `D` itself when none is), zero-pad the last axis of `q`, `k`,
/// `v` from `D` to `T` (all axes passed to `pad`, as `mx.pad` does), run
/// `fast.scaled_dot_product_attention(q, k, v, scale, mask)` and slice the output back to
/// `[..., :D]`. Grouped-query attention (`Hkv < Hq`) is handled by the SDPA itself.
///
/// The reference `mx.compile`s this function; on the CPU the compiled and eager graphs give
/// the same bits (the op parity suite compares against the compiled one).
pub fn ensure_fused_sdpa(q: &Array, k: &Array, v: &Array, scale: f32, mask: Option<&Array>) -> Result<Array> {
    let head_dim = q.dim(-1)?;
    let target = FUSED_HEAD_DIMS.into_iter().find(|&t| head_dim <= t).unwrap_or(head_dim);
    let mask = mask.map_or(AttentionMask::None, AttentionMask::Array);
    let out = if target == head_dim {
        fast::scaled_dot_product_attention(q, k, v, scale, mask)?
    } else {
        let pad = |x: &Array| -> Result<Array> {
            let ndim = x.ndim() as i32;
            let axes: Vec<i32> = (0..ndim).collect();
            let low = vec![0; axes.len()];
            let mut high = vec![0; axes.len()];
            if let Some(last) = high.last_mut() {
                *last = target - head_dim;
            }
            Ok(x.pad(&axes, &low, &high, 0)?)
        };
        fast::scaled_dot_product_attention(&pad(q)?, &pad(k)?, &pad(v)?, scale, mask)?
    };
    Ok(out.slice_axis(-1, 0, head_dim)?)
}
