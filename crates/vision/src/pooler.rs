//! The gemma4 vision tower's pooler (mlx-vlm `VisionPooler`).

use crate::Result;
use layers::Execution;
use tensor::{Array, Dtype};

/// Average pooling of patch features by their grid positions into `output_length` slots,
/// then scaling by `√hidden_size`. No weights.
#[derive(Debug, Clone)]
pub struct Pooler {
    hidden_size: i32,
    execution: Execution,
}

impl Pooler {
    /// A pooler for a hidden width of `hidden_size`, its averaging product
    /// ([`layers::ops::contract_tokens`]) computed by `execution`.
    pub fn new(hidden_size: i32, execution: Execution) -> Pooler {
        Pooler { hidden_size, execution }
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
    /// Returns `pooled` `[B, length, D]` in the hidden dtype. The reference's `valid` mask is
    /// computed on the host by [`valid_counts`](Self::valid_counts) (it depends on the
    /// positions only), so a forward pass needs no evaluation before its end.
    ///
    /// `length` must be in `1..=L` (the reference divides by it and by `k`).
    pub fn forward(&self, hidden: &Array, positions: &Array, padding: &Array, length: i32) -> Result<Array> {
        let h = padding.expand_dims(-1)?.select(0.0, hidden)?;
        let seq_len = h.dim(1)?;
        if length < 1 || length > seq_len {
            return Err(crate::Error::input(format!("cannot pool {seq_len} patches into {length} slots")));
        }
        let pooled = if seq_len == length {
            h
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
            layers::ops::contract_tokens(self.execution, &weights, &h)?.astype(h.dtype())?
        };
        let root = f64::from(self.hidden_size).sqrt();
        Ok(pooled.mul(root)?)
    }

    /// Per batch row, `count(valid)`: the number of pooled rows the reference keeps. For
    /// `positions` `[B, L, 2]` (row-major host values) it is the number of distinct slots
    /// `idx ∈ [0, length)` that [`forward`](Self::forward)'s one-hot assigns any patch to
    /// (padding patches, clamped to (0, 0), land in slot 0 like in the reference); when
    /// `L == length`, the reference's quirk: the number of padding patches.
    pub fn valid_counts(positions: &[i64], batch: usize, length: usize) -> Vec<usize> {
        let seq_len = positions.len().checked_div(batch).unwrap_or(0) / 2;
        if seq_len == 0 || length == 0 || length > seq_len {
            // Nothing to pool (`forward` refuses these lengths).
            return vec![0; batch];
        }
        positions
            .chunks_exact(2 * seq_len)
            .map(|row| {
                let ids: Vec<(i64, i64)> = row.chunks_exact(2).map(|p| (p[0], p[1])).collect();
                if seq_len == length {
                    return ids.iter().filter(|&&(x, y)| x == -1 && y == -1).count();
                }
                let k = ((seq_len / length) as f64).sqrt() as i64;
                let max_x = ids.iter().map(|&(x, _)| x.max(0)).max().unwrap_or(0).saturating_add(1);
                let mut used = vec![false; length];
                for &(x, y) in &ids {
                    let (kx, ky) =
                        ((x.max(0) as f32 / k as f32).floor() as i64, (y.max(0) as f32 / k as f32).floor() as i64);
                    let idx = kx.saturating_add(max_x.div_euclid(k).saturating_mul(ky));
                    if let Some(slot) = usize::try_from(idx).ok().and_then(|i| used.get_mut(i)) {
                        *slot = true;
                    }
                }
                used.iter().filter(|&&u| u).count()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference's `valid` mask (`_avg_pool_by_positions`), computed with MLX ops.
    fn reference_counts(positions: &[i64], batch: i32, seq_len: i32, length: i32) -> Vec<usize> {
        let ids = Array::from_slice(positions, &[batch, seq_len, 2]).unwrap();
        let k = ((seq_len / length) as f64).sqrt() as i32;
        let clamped = ids.clip(Some(&Array::scalar(0i64).unwrap()), None).unwrap();
        let xs = clamped.slice_axis(-1, 0, 1).unwrap().squeeze(&[-1]).unwrap();
        let max_x = xs.max(&[-1], true).unwrap().add(1).unwrap();
        let kernel = clamped.astype(Dtype::F32).unwrap().div(k).unwrap().floor().unwrap().astype(Dtype::I32).unwrap();
        let kx = kernel.slice_axis(-1, 0, 1).unwrap().squeeze(&[-1]).unwrap();
        let ky = kernel.slice_axis(-1, 1, 2).unwrap().squeeze(&[-1]).unwrap();
        let idx = kx.add(max_x.floor_div(k).unwrap().mul(&ky).unwrap()).unwrap();
        let slots = Array::arange(0.0, f64::from(length), 1.0, Dtype::I32).unwrap();
        let weights = idx.expand_dims(-1).unwrap().eq(&slots).unwrap().astype(Dtype::F32).unwrap();
        let valid = weights.eq(0).unwrap().all(&[1], false).unwrap().logical_not().unwrap();
        let counts = valid.astype(Dtype::I32).unwrap().sum(&[-1], false).unwrap().to_vec::<i32>().unwrap();
        counts.into_iter().map(|c| c as usize).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn host_counts_equal_the_reference_mask(rows in 1i64..10, cols in 1i64..10, pad in 0i64..20, k in 1i64..4, batch in 1i32..3) {
            let mut positions = Vec::new();
            for _ in 0..batch {
                for r in 0..rows {
                    for c in 0..cols {
                        positions.extend([c, r]);
                    }
                }
                for _ in 0..pad {
                    positions.extend([-1, -1]);
                }
            }
            let seq_len = (rows * cols + pad) as i32;
            let length = (seq_len / (k * k) as i32).max(1);
            let host = Pooler::valid_counts(&positions, batch as usize, length as usize);
            if seq_len == length {
                let pads = vec![pad as usize; batch as usize];
                prop_assert_eq!(host, pads);
            } else {
                prop_assert_eq!(host, reference_counts(&positions, batch, seq_len, length));
            }
        }
    }
}
