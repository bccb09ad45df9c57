//! Row-wise softmax in place.

use super::exp::exp_in_place;
use super::parallel::for_row_chunks;
use crate::{Error, Result};

/// Replaces each row `x` (`row_len` values; `data.len()` a multiple of it) with
/// `softmax(scale · x + mask_row)`, where `mask`, if given, holds `mask_rows` rows of
/// `row_len` additive values and row `r` uses mask row `r % mask_rows`. Accumulates in
/// float32 after subtracting the row maximum. Rows are spread over the cores.
///
/// Fails with [`Error::Shape`] (touching nothing) when `data` is not a whole number of rows or
/// the mask holds fewer than `mask_rows` rows (or none).
pub fn softmax_rows(data: &mut [f32], row_len: usize, scale: f32, mask: Option<(&[f32], usize)>) -> Result<()> {
    let shape = |detail: String| Error::Shape { op: "softmax_rows", detail };
    if row_len == 0 || !data.len().is_multiple_of(row_len) {
        return Err(shape(format!("{} values are not rows of {row_len}", data.len())));
    }
    if let Some((mask, mask_rows)) = mask
        && (mask_rows == 0 || mask_rows.checked_mul(row_len).is_none_or(|n| mask.len() < n))
    {
        return Err(shape(format!("a mask of {} values does not hold {mask_rows} rows of {row_len}", mask.len())));
    }
    for_row_chunks(data, row_len, |chunk, first_row| {
        for (i, row) in chunk.chunks_exact_mut(row_len).enumerate() {
            if scale != 1.0 {
                row.iter_mut().for_each(|v| *v *= scale);
            }
            if let Some((mask, mask_rows)) = mask {
                let r = (first_row + i) % mask_rows;
                row.iter_mut().zip(&mask[r * row_len..(r + 1) * row_len]).for_each(|(v, m)| *v += m);
            }
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let shift = if max.is_finite() { max } else { 0.0 };
            row.iter_mut().for_each(|v| *v -= shift);
            exp_in_place(row);
            let sum: f32 = row.iter().sum();
            let inv = 1.0 / sum;
            row.iter_mut().for_each(|v| *v *= inv);
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sum_to_one_and_follow_the_mask() {
        let mut data: Vec<f32> = (0..3 * 5).map(|i| (i as f32 * 0.7).sin() * 4.0).collect();
        let original = data.clone();
        let mask = [0.0, 0.0, -1e4, 0.0, -1e4];
        softmax_rows(&mut data, 5, 2.0, Some((&mask, 1))).unwrap();
        for (r, row) in data.chunks(5).enumerate() {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
            assert_eq!(row[2], 0.0);
            assert_eq!(row[4], 0.0);
            let x: Vec<f64> = (0..5).map(|c| 2.0 * original[r * 5 + c] as f64 + mask[c] as f64).collect();
            let max = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let denom: f64 = x.iter().map(|v| (v - max).exp()).sum();
            for c in 0..5 {
                let expected = (x[c] - max).exp() / denom;
                assert!((row[c] as f64 - expected).abs() < 1e-6, "row {r} col {c}");
            }
        }
        for (row_len, mask) in [(0, None), (4, None), (5, Some((&mask[..4], 1))), (5, Some((&mask[..], 0)))] {
            let before = data.clone();
            assert!(matches!(softmax_rows(&mut data, row_len, 1.0, mask), Err(Error::Shape { .. })));
            assert_eq!(data, before);
        }
    }
}
