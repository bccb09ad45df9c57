//! Facts about the MLX this process runs on: its version and the BLAS serving float32 matmuls.

use crate::Result;
use crate::status::{check, init};
use mlx_ffi as ffi;
use std::ffi::CStr;

/// The version of the MLX library this process runs on, e.g. `"0.32.2"`.
pub fn mlx_version() -> Result<String> {
    init();
    // SAFETY: `mlx_string_new` makes an empty string handle that we free below.
    let mut text = unsafe { ffi::mlx_string_new() };
    let result = check("mlx_version", || unsafe { ffi::mlx_version(&mut text) }).map(|()| {
        // SAFETY: the string handle is valid until freed; its data is NUL-terminated.
        let ptr = unsafe { ffi::mlx_string_data(text) };
        if ptr.is_null() { String::new() } else { unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned() }
    });
    // SAFETY: freed exactly once.
    unsafe { ffi::mlx_string_free(text) };
    result
}

/// The shared library serving MLX's float32 matmuls on the CPU backend (the one providing
/// `cblas_sgemm` to this process).
pub fn blas_provider() -> Option<std::path::PathBuf> {
    init();
    ffi::blas::cblas_provider()
}
