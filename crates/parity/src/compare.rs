//! One comparison between our output and the reference's.

use tensor::{Array, Dtype};

/// How one output of ours compares with the reference's.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// What was compared (a stage, an op and dtype, a file).
    pub name: String,
    /// Dtype and shape of the reference, e.g. `bfloat16 [1, 2520, 768]`.
    pub what: String,
    /// Largest absolute elementwise difference (infinite when shapes or dtypes differ).
    pub max_abs_diff: f64,
    /// `sqrt(Σ(a−b)²) / sqrt(Σb²)` over all elements (0 when identical).
    pub rel_rmse: f64,
    /// Elements (or bytes, for byte comparisons) that differ.
    pub differing: usize,
    /// Elements (or bytes) compared.
    pub total: usize,
    /// Same dtype, same shape, same bytes.
    pub bit_exact: bool,
}

/// Compares two arrays: bit-exactness on their bytes, differences on their values as f64.
pub fn compare_arrays(name: &str, ours: &Array, reference: &Array) -> tensor::Result<Comparison> {
    let what = format!("{} {:?}", reference.dtype(), reference.shape());
    if ours.dtype() != reference.dtype() || ours.shape() != reference.shape() {
        return Ok(Comparison {
            name: name.to_owned(),
            what: format!("{what} vs ours {} {:?}", ours.dtype(), ours.shape()),
            max_abs_diff: f64::INFINITY,
            rel_rmse: f64::INFINITY,
            differing: reference.size(),
            total: reference.size(),
            bit_exact: false,
        });
    }
    let a = values(ours)?;
    let b = values(reference)?;
    let bit_exact = ours.with_bytes(|x| reference.with_bytes(|y| x == y))??;
    let (mut max_abs, mut err, mut norm, mut differing) = (0f64, 0f64, 0f64, 0usize);
    for (&x, &y) in a.iter().zip(&b) {
        let d = (x - y).abs();
        if d > 0.0 || x.is_nan() != y.is_nan() {
            differing += 1;
        }
        max_abs = max_abs.max(d);
        err += d * d;
        norm += y * y;
    }
    let rel_rmse = if norm > 0.0 { (err / norm).sqrt() } else { err.sqrt() };
    Ok(Comparison {
        name: name.to_owned(),
        what,
        max_abs_diff: max_abs,
        rel_rmse,
        differing,
        total: b.len(),
        bit_exact,
    })
}

/// Compares two byte buffers (images, raw tensors) byte for byte.
pub fn compare_bytes(name: &str, what: &str, ours: &[u8], reference: &[u8]) -> Comparison {
    let same_len = ours.len() == reference.len();
    let differing = ours.iter().zip(reference).filter(|(a, b)| a != b).count() + ours.len().abs_diff(reference.len());
    let max_abs = ours.iter().zip(reference).map(|(&a, &b)| f64::from(a.abs_diff(b))).fold(0.0, f64::max);
    let (err, norm) = ours.iter().zip(reference).fold((0f64, 0f64), |(e, n), (&a, &b)| {
        let d = f64::from(a) - f64::from(b);
        (e + d * d, n + f64::from(b) * f64::from(b))
    });
    Comparison {
        name: name.to_owned(),
        what: what.to_owned(),
        max_abs_diff: if same_len { max_abs } else { f64::INFINITY },
        rel_rmse: if norm > 0.0 { (err / norm).sqrt() } else { err.sqrt() },
        differing,
        total: reference.len(),
        bit_exact: same_len && differing == 0,
    }
}

fn values(array: &Array) -> tensor::Result<Vec<f64>> {
    let as_f32 = if array.dtype() == Dtype::F32 { array.clone() } else { array.astype(Dtype::F32)? };
    Ok(as_f32.to_vec::<f32>()?.into_iter().map(f64::from).collect())
}
