//! Which library serves MLX's float32 matmuls on the CPU backend.
//!
//! libmlx calls `cblas_sgemm` for float32 matmuls. Nothing is linked ahead of it, so in this
//! build the symbol resolves to the BLAS the MLX wheel bundles (the reference BLAS in
//! `mlx_cpu.libs/`), exactly as in a stock `pip install mlx-vlm`; the parity suites rely on it.

#![allow(unsafe_code, reason = "reads the dynamic linker's symbol table")]

/// The shared library that provides `cblas_sgemm` to this process, i.e. the BLAS that MLX's
/// float32 matmuls call (symbol lookup follows the same global search order for both).
pub fn cblas_provider() -> Option<std::path::PathBuf> {
    use std::ffi::CStr;
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name; dladdr only reads the address
    // and fills the zeroed struct; the file name it returns is a NUL-terminated static string.
    unsafe {
        let symbol = libc::dlsym(libc::RTLD_DEFAULT, c"cblas_sgemm".as_ptr());
        if symbol.is_null() {
            return None;
        }
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(symbol, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        Some(CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned().into())
    }
}
