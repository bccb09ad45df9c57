//! Features as NumPy arrays, one `[n_i, D]` array per image.

use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use tensor::Dtype;
use vision::Features;

/// One call's features on the host, split by image.
#[derive(Debug)]
pub struct HostFeatures {
    pub dtype: Dtype,
    /// Columns (the language model's hidden size).
    pub hidden: usize,
    /// Each image's rows (its soft tokens) and their bytes, row-major.
    pub images: Vec<(usize, Vec<u8>)>,
}

/// Copies `features` to the host, one buffer per image; with `as_float32`, bf16 and f16 values
/// become float32 (exactly: every bf16 and f16 value is a float32 value).
pub fn split(features: &Features, as_float32: bool) -> tensor::Result<HostFeatures> {
    let array = &features.features;
    let hidden = usize::try_from(array.dim(1)?).unwrap_or(0);
    let dtype = array.dtype();
    let widen = as_float32 && matches!(dtype, Dtype::Bf16 | Dtype::F16);
    let images = array.with_bytes(|bytes| {
        let per_token = hidden * dtype.size();
        let mut start = 0;
        features
            .soft_tokens
            .iter()
            .map(|&n| {
                let end = (start + n * per_token).min(bytes.len());
                let own = &bytes[start.min(end)..end];
                start = end;
                (n, if widen { to_float32(dtype, own) } else { own.to_vec() })
            })
            .collect()
    })?;
    Ok(HostFeatures { dtype: if widen { Dtype::F32 } else { dtype }, hidden, images })
}

/// Little-endian bf16 or f16 values to little-endian float32.
fn to_float32(dtype: Dtype, bytes: &[u8]) -> Vec<u8> {
    bytes
        .chunks_exact(2)
        .flat_map(|pair| {
            let bits = u16::from_le_bytes([pair[0], pair[1]]);
            let value = match dtype {
                Dtype::Bf16 => half::bf16::from_bits(bits).to_f32(),
                _ => half::f16::from_bits(bits).to_f32(),
            };
            value.to_le_bytes()
        })
        .collect()
}

/// NumPy arrays `[n_i, D]` over copies of the host buffers: float32 as `numpy.float32`,
/// bf16 as `ml_dtypes.bfloat16` (the exact bits), other dtypes under their NumPy names.
pub fn to_numpy<'py>(py: Python<'py>, host: HostFeatures) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let numpy = py.import("numpy")?;
    let dtype = match host.dtype {
        Dtype::Bf16 => py.import("ml_dtypes")?.getattr("bfloat16")?,
        // Every other dtype's name (its `Display`) is NumPy's name for it.
        other => numpy.getattr("dtype")?.call1((other.to_string(),))?,
    };
    host.images
        .into_iter()
        .map(|(rows, bytes)| {
            let buffer = PyByteArray::new(py, &bytes);
            numpy.call_method1("frombuffer", (buffer, &dtype))?.call_method1("reshape", ((rows, host.hidden),))
        })
        .collect()
}
