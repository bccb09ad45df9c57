//! A temporary mlx-c vector of arrays, for calls that take or return several.

use crate::status::init;
use crate::{Array, Error, Result};
use mlx_ffi as ffi;
use std::panic::Location;

pub(crate) struct VectorArray {
    raw: ffi::mlx_vector_array,
}

impl VectorArray {
    #[track_caller]
    pub(crate) fn new(arrays: &[&Array]) -> Result<VectorArray> {
        init();
        let raws: Vec<ffi::mlx_array> = arrays.iter().map(|a| a.as_raw()).collect();
        // SAFETY: mlx-c copies the handles (sharing the arrays); we free the vector on drop.
        let raw = unsafe { ffi::mlx_vector_array_new_data(raws.as_ptr(), raws.len()) };
        if raw.ctx.is_null() {
            return Err(Error::Mlx {
                op: "vector_array",
                message: "allocation failed".into(),
                location: Location::caller(),
            });
        }
        Ok(VectorArray { raw })
    }

    /// An empty vector for mlx-c to fill.
    pub(crate) fn empty() -> VectorArray {
        init();
        VectorArray { raw: unsafe { ffi::mlx_vector_array_new() } }
    }

    pub(crate) fn raw(&self) -> ffi::mlx_vector_array {
        self.raw
    }

    pub(crate) fn as_mut_raw(&mut self) -> *mut ffi::mlx_vector_array {
        &mut self.raw
    }

    /// The arrays, as owned handles.
    #[track_caller]
    pub(crate) fn to_arrays(&self) -> Result<Vec<Array>> {
        let len = unsafe { ffi::mlx_vector_array_size(self.raw) };
        (0..len)
            .map(|i| Array::from_op("vector_array_get", |out| unsafe { ffi::mlx_vector_array_get(out, self.raw, i) }))
            .collect()
    }
}

impl Drop for VectorArray {
    fn drop(&mut self) {
        unsafe { ffi::mlx_vector_array_free(self.raw) };
    }
}
