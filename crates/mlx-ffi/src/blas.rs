//! The BLAS that serves MLX's float32 matmuls on the CPU backend.
//!
//! On Linux the build script links Debian's BLIS ahead of `libmlx`, so BLIS's `cblas_*`
//! symbols take precedence over the reference BLAS the MLX wheel bundles. BLIS runs single
//! threaded unless told otherwise; [`configure`] sets its thread count once per process.

#![allow(unsafe_code, reason = "calls into the linked BLAS")]

/// What BLAS serves MLX's CPU float32 matmuls in this build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlasInfo {
    /// Library name, e.g. `"BLIS"`, or `"libmlx default"` when no BLAS was linked ahead of it.
    pub name: &'static str,
    /// Library version, when the library reports one.
    pub version: Option<String>,
    /// Kernel family the library selected for this CPU (BLIS's configuration name).
    pub kernels: Option<String>,
    /// Threads a single BLAS call may use.
    pub threads: usize,
}

#[cfg(mlx_blas = "blis")]
mod blis {
    use super::BlasInfo;
    use std::ffi::{CStr, c_char};

    unsafe extern "C" {
        fn bli_thread_set_num_threads(n_threads: i64);
        fn bli_thread_get_num_threads() -> i64;
        fn bli_info_get_version_str() -> *const c_char;
        fn bli_arch_query_id() -> i32;
        fn bli_arch_string(id: i32) -> *const c_char;
    }

    fn string(ptr: *const c_char) -> Option<String> {
        // SAFETY: BLIS returns pointers to static NUL-terminated strings (or null).
        (!ptr.is_null()).then(|| unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned())
    }

    pub fn configure(threads: usize) {
        // SAFETY: a plain setter of BLIS's global runtime; safe to call from any thread.
        unsafe { bli_thread_set_num_threads(threads as i64) }
    }

    pub fn info() -> BlasInfo {
        // SAFETY: BLIS query functions without preconditions.
        let (version, kernels, threads) = unsafe {
            (
                string(bli_info_get_version_str()),
                string(bli_arch_string(bli_arch_query_id())),
                bli_thread_get_num_threads(),
            )
        };
        BlasInfo { name: "BLIS", version, kernels, threads: threads.max(1) as usize }
    }
}

/// Lets the BLAS use `threads` threads per call. Results do not depend on the thread count
/// (the BLAS splits output rows and columns, never the reduction).
pub fn configure(threads: usize) {
    #[cfg(mlx_blas = "blis")]
    blis::configure(threads.max(1));
    #[cfg(not(mlx_blas = "blis"))]
    let _ = threads;
}

/// The BLAS linked into this build.
pub fn info() -> BlasInfo {
    #[cfg(mlx_blas = "blis")]
    return blis::info();
    #[cfg(not(mlx_blas = "blis"))]
    BlasInfo { name: "libmlx default", version: None, kernels: None, threads: 1 }
}

/// The shared library that provides `cblas_sgemm` to this process, i.e. the BLAS that MLX's
/// float32 matmuls call (symbol lookup follows the same global search order for both).
pub fn cblas_provider() -> Option<std::path::PathBuf> {
    use std::ffi::CStr;
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name; dladdr only reads the address.
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
