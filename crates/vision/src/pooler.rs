//! The gemma4 vision tower's pooler (mlx-vlm `VisionPooler`).

use crate::Result;
use tensor::{Array, Dtype};

/// Average pooling of patch features by their grid positions into `output_length` slots,
/// then scaling by `√hidden_size`. No weights.
#[derive(Debug, Clone)]
pub struct Pooler {
    hidden_size: i32,
}

/// The pooler's output: features per slot and which slots are real.
#[derive(Debug)]
pub struct Pooled {
    /// `[B, length, D]` in the hidden dtype, already scaled by `√hidden_size`.
    pub features: Array,
    /// `[B, length]` bool: the slots that received at least one patch (the reference's
    /// `pool_mask`; see [`Pooler::forward`] for the `L == length` case).
    pub valid: Array,
}

impl Pooler {
    pub fn new(hidden_size: i32) -> Pooler {
        Pooler { hidden_size }
    }

    /// `VisionPooler.__call__` for `hidden` `[B, L, D]`, `positions` `[B, L, 2]` integer (x, y),
    /// `padding` `[B, L]` bool:
    ///
    /// ```text
    /// h = where(padding[..., None], 0.0, hidden)
    /// k = int(sqrt(L // length)); clamped = clip(positions, 0, None)
    /// max_x = max(clamped[..., 0], -1, keepdims) + 1
    /// ki = floor(clamped.astype(f32) / k).astype(i32); idx = ki[..., 0] + (max_x // k) * ki[..., 1]
    /// W = one_hot(idx, length).astype(f32) / k²          # [B, L, length]
    /// pooled = einsum("bLl,bLd->bld", W, h).astype(h.dtype); valid = !all(W == 0, axis=1)
    /// pooled = pooled * hidden_size ** 0.5                # weak scalar
    /// ```
    ///
    /// When `L == length` the reference skips pooling and returns the padding mask as the
    /// "valid" mask (its quirk, kept: only reachable with a pooling kernel of 1).
    pub fn forward(&self, hidden: &Array, positions: &Array, padding: &Array, length: i32) -> Result<Pooled> {
        let h = padding.expand_dims(-1)?.select(0.0, hidden)?;
        let seq_len = h.dim(1)?;
        let (pooled, valid) = if seq_len == length {
            (h, padding.clone())
        } else {
            let k = ((seq_len / length) as f64).sqrt() as i32;
            let clamped = positions.clip(Some(&Array::scalar(0i32)?.astype(positions.dtype())?), None)?;
            let xs = clamped.slice_axis(-1, 0, 1)?.squeeze(&[-1])?;
            let max_x = xs.max(&[-1], true)?.add(1)?;
            let kernel = clamped.astype(Dtype::F32)?.div(k)?.floor()?.astype(Dtype::I32)?;
            let kx = kernel.slice_axis(-1, 0, 1)?.squeeze(&[-1])?;
            let ky = kernel.slice_axis(-1, 1, 2)?.squeeze(&[-1])?;
            let idx = kx.add(&max_x.floor_div(k)?.mul(&ky)?)?;
            let slots = Array::arange(0.0, f64::from(length), 1.0, Dtype::I32)?;
            let weights = idx.expand_dims(-1)?.eq(&slots)?.astype(Dtype::F32)?.astype(Dtype::F32)?.div(k * k)?;
            let pooled = Array::einsum("bLl,bLd->bld", &[&weights, &h])?.astype(h.dtype())?;
            let valid = weights.eq(0)?.all(&[1], false)?.logical_not()?;
            (pooled, valid)
        };
        let root = f64::from(self.hidden_size).sqrt();
        Ok(Pooled { features: pooled.mul(root)?, valid })
    }
}
