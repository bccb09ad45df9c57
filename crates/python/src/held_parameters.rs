//! mlx-vlm's vision parameters as [`vision::HeldTensor`]s, their bytes read in place.

use crate::borrowed_bytes::BorrowedBytes;
use crate::mlx_arrays::{dtype_of, shape_of};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use tensor::Dtype;
use vision::HeldTensor;

/// One parameter of a loaded mlx-vlm model: its sanitized name, dtype and shape, and its bytes
/// borrowed from MLX's buffer. Compared while the GIL is held (`py`).
pub struct HeldParameter<'py> {
    py: Python<'py>,
    name: String,
    dtype: Dtype,
    shape: Vec<i32>,
    bytes: BorrowedBytes,
}

impl std::fmt::Debug for HeldParameter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldParameter")
            .field("name", &self.name)
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .finish()
    }
}

impl HeldTensor for HeldParameter<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn dtype(&self) -> Dtype {
        self.dtype
    }

    fn shape(&self) -> &[i32] {
        &self.shape
    }

    fn bytes_equal(&self, bytes: &[u8]) -> bool {
        self.bytes.with_bytes(self.py, |held| held == bytes).unwrap_or(false)
    }
}

/// `parameters`: `(name, mx.array)` pairs (what `mlx.utils.tree_flatten(module.parameters())`
/// gives, prefixed with the module's name).
pub fn extract<'py>(parameters: &Bound<'py, PyAny>) -> PyResult<Vec<HeldParameter<'py>>> {
    parameters
        .try_iter()?
        .map(|pair| {
            let (name, array): (String, Bound<'py, PyAny>) = pair?.extract()?;
            let dtype = dtype_of(&array).ok_or_else(|| {
                PyTypeError::new_err(format!("parameter `{name}` is not an mx.array of a known dtype"))
            })?;
            let shape = shape_of(&array)?;
            let bytes = BorrowedBytes::of_mlx_array(&array)
                .map_err(|e| PyValueError::new_err(format!("parameter `{name}`: {e}")))?;
            Ok(HeldParameter { py: array.py(), name, dtype, shape, bytes })
        })
        .collect()
}
