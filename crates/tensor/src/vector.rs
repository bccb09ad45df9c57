//! A temporary mlx-c vector of arrays, for calls that take or return several.

use crate::status::{api, init};
use crate::{Array, Error, Result};
use mlx_ffi as ffi;
use std::panic::Location;

/// Owns one `mlx_vector_array` handle (a heap `std::vector` of array references), freed by
/// `Drop`; it is live for as long as the `VectorArray` is, and null only after an allocation
/// failure, which mlx-c reports as an error wherever a null handle is used.
pub(crate) struct VectorArray {
    raw: ffi::mlx_vector_array,
}

impl VectorArray {
    #[track_caller]
    pub(crate) fn new(arrays: &[&Array]) -> Result<VectorArray> {
        init()?;
        let raws: Vec<ffi::mlx_array> = arrays.iter().map(|a| a.as_raw()).collect();
        // SAFETY: `raws` is one Vec's own pointer and length, borrowed for the call; each of its
        // handles belongs to an `Array` in `arrays`, borrowed (so live) for the call. mlx-c pushes
        // a copy of each array (a reference-count copy) into a new vector of its own, so the
        // result does not depend on `raws` or `arrays` afterwards. The returned handle is ours.
        let raw = unsafe { api().mlx_vector_array_new_data(raws.as_ptr(), raws.len()) };
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
    pub(crate) fn empty() -> Result<VectorArray> {
        init()?;
        // SAFETY: `mlx_vector_array_new` has no preconditions; the new handle is ours.
        Ok(VectorArray { raw: unsafe { api().mlx_vector_array_new() } })
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
        // SAFETY: `self.raw` is live while `self` is borrowed.
        unsafe { arrays_in(self.raw) }
    }
}

/// The arrays of the vector `raw`, as owned handles (reference-count copies).
///
/// # Safety
/// `raw` must be a live `mlx_vector_array` for the duration of the call.
#[track_caller]
pub(crate) unsafe fn arrays_in(raw: ffi::mlx_vector_array) -> Result<Vec<Array>> {
    init()?;
    // SAFETY: the caller keeps `raw` live for the call; this only reads the length.
    let len = unsafe { api().mlx_vector_array_size(raw) };
    (0..len)
        .map(|i| {
            // SAFETY: the op-call contract of `Array::from_op`, with the live `raw` as input;
            // mlx-c bounds-checks `i` (`std::vector::at`) and copies the array out.
            Array::from_op("vector_array_get", |out| unsafe { api().mlx_vector_array_get(out, raw, i) })
        })
        .collect()
}

impl Drop for VectorArray {
    fn drop(&mut self) {
        // SAFETY: `self.raw` is owned by this `VectorArray` alone and freed once, here; the
        // arrays it held keep their own references.
        unsafe { api().mlx_vector_array_free(self.raw) };
    }
}
