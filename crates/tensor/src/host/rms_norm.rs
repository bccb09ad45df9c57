//! RMS normalisation of float32 rows.

use super::parallel::for_row_chunks;
use crate::{Error, Result};

/// `out = x · (mean(x²) + eps)^(−1/2) · weight` for one row (`weight`, if given, as long as
/// `x`; `out` at least as long). The mean is accumulated in float32 over 16 lanes, so it is the
/// reference's value up to the order of that sum.
pub fn rms_norm_row(x: &[f32], weight: Option<&[f32]>, eps: f32, out: &mut [f32]) {
    let mut lanes = [0f32; 16];
    let chunks = x.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().map(|v| v * v).sum();
    for chunk in chunks {
        lanes.iter_mut().zip(chunk).for_each(|(lane, v)| *lane += v * v);
    }
    let squares = lanes.iter().sum::<f32>() + tail;
    let scale = 1.0 / (squares / x.len() as f32 + eps).sqrt();
    match weight {
        Some(w) => out.iter_mut().zip(x).zip(w).for_each(|((y, &u), &w)| *y = u * scale * w),
        None => out.iter_mut().zip(x).for_each(|(y, &u)| *y = u * scale),
    }
}

/// [`rms_norm_row`] over every row of `x` (`row_len` values each) into `out`, rows spread over
/// the cores.
///
/// Fails with [`Error::Shape`] (writing nothing) when `x` is not a whole number of rows, `out`
/// is not as long as `x`, or `weight` is not `row_len` values.
pub fn rms_norm_rows(x: &[f32], row_len: usize, weight: Option<&[f32]>, eps: f32, out: &mut [f32]) -> Result<()> {
    let rows_fit = row_len > 0 && x.len().is_multiple_of(row_len);
    if !rows_fit || out.len() != x.len() || weight.is_some_and(|w| w.len() != row_len) {
        return Err(Error::Shape {
            op: "host.rms_norm_rows",
            detail: format!(
                "{} values in rows of {row_len} into {} with a weight of {:?} values",
                x.len(),
                out.len(),
                weight.map(<[f32]>::len)
            ),
        });
    }
    for_row_chunks(out, row_len, |chunk, first_row| {
        let input = &x[first_row * row_len..][..chunk.len()];
        for (y, u) in chunk.chunks_exact_mut(row_len).zip(input.chunks_exact(row_len)) {
            rms_norm_row(u, weight, eps, y);
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_match_the_formula_in_f64() {
        let row_len = 37;
        let x: Vec<f32> = (0..5 * row_len).map(|i| ((i * 13 % 29) as f32 - 14.0) * 0.37).collect();
        let w: Vec<f32> = (0..row_len).map(|i| 0.5 + i as f32 * 0.03).collect();
        for weight in [None, Some(w.as_slice())] {
            let mut out = vec![0f32; x.len()];
            rms_norm_rows(&x, row_len, weight, 1e-6, &mut out).unwrap();
            for (u, y) in x.chunks(row_len).zip(out.chunks(row_len)) {
                let mean = u.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / row_len as f64;
                for (i, (&u, &y)) in u.iter().zip(y).enumerate() {
                    let scale = weight.map_or(1.0, |w| w[i] as f64);
                    let expected = u as f64 / (mean + 1e-6).sqrt() * scale;
                    assert!((y as f64 - expected).abs() <= 1e-6 * (1.0 + expected.abs()), "{y} vs {expected}");
                }
            }
        }
    }

    #[test]
    fn mismatched_lengths_are_shape_errors() {
        let x = [1f32; 12];
        let mut out = [7f32; 12];
        for (row_len, weight, out_len) in [(5, None, 12), (0, None, 12), (4, Some(&[1f32; 3][..]), 12), (4, None, 11)] {
            let result = rms_norm_rows(&x, row_len, weight, 1e-6, &mut out[..out_len]);
            assert!(matches!(result, Err(Error::Shape { .. })), "{row_len} {weight:?} {out_len}: {result:?}");
        }
        assert_eq!(out, [7f32; 12], "nothing written");
    }
}
