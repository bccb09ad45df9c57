//! Facts about the MLX this process runs on: its version, where its library is, and the BLAS
//! libmlx resolved.

use crate::Result;
use crate::status::{check, init};
use mlx_ffi as ffi;
use std::ffi::CStr;

/// The version of the MLX library this process runs on, e.g. `"0.32.2"`.
pub fn mlx_version() -> Result<String> {
    init();
    // SAFETY: `mlx_string_new` has no preconditions; the new handle is ours, freed below.
    let mut text = unsafe { ffi::mlx_string_new() };
    // SAFETY: `text` is a valid handle, exclusively borrowed, that the call sets to the version.
    let result = check("mlx_version", || unsafe { ffi::mlx_version(&mut text) }).map(|()| {
        // SAFETY: `text` is live until it is freed below; the call returns its `c_str()` (or null
        // on failure) without copying.
        let ptr = unsafe { ffi::mlx_string_data(text) };
        if ptr.is_null() {
            return String::new();
        }
        // SAFETY: `ptr` (non-null) is the NUL-terminated buffer of the `std::string` that `text`
        // owns, unchanged until `text` is freed below, after the text was copied out here.
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    });
    // SAFETY: `text` is ours, no longer used (nothing borrowed from it survives), and freed once.
    unsafe { ffi::mlx_string_free(text) };
    result
}

/// The directory of the libmlx this build linked (the wheel's `mlx/lib`, or `MLX_DIR`'s).
pub fn mlx_lib_dir() -> &'static str {
    ffi::MLX_LIB_DIR
}

/// The shared library serving MLX's float32 matmuls on the CPU backend (the one providing
/// `cblas_sgemm` to this process).
pub fn blas_provider() -> Option<std::path::PathBuf> {
    init();
    ffi::blas::cblas_provider()
}
