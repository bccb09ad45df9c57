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

    /// BLIS 0.9's `rntm_t` (`frame/include/bli_type_defs.h`) for a 64-bit `dim_t`.
    #[repr(C)]
    struct Runtime {
        auto_factor: bool,
        num_threads: i64,
        thrloop: [i64; 6],
        pack_a: bool,
        pack_b: bool,
        l3_sup: bool,
        sba_pool: *mut std::ffi::c_void,
        pba: *mut std::ffi::c_void,
    }

    unsafe extern "C" {
        fn bli_info_get_int_type_size() -> i64;
        fn bli_sgemm_ex(
            transa: i32,
            transb: i32,
            m: i64,
            n: i64,
            k: i64,
            alpha: *const f32,
            a: *const f32,
            rs_a: i64,
            cs_a: i64,
            b: *const f32,
            rs_b: i64,
            cs_b: i64,
            beta: *const f32,
            c: *mut f32,
            rs_c: i64,
            cs_c: i64,
            cntx: *const std::ffi::c_void,
            rntm: *const Runtime,
        );
    }

    /// Whether the linked BLIS is the one whose `rntm_t` layout [`Runtime`] mirrors.
    fn has_known_runtime_layout() -> bool {
        static KNOWN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        // SAFETY: BLIS query functions without preconditions.
        *KNOWN.get_or_init(|| unsafe {
            string(bli_info_get_version_str()).as_deref() == Some("0.9.0") && bli_info_get_int_type_size() == 64
        })
    }

    /// See [`super::sgemm_on_calling_thread`].
    pub unsafe fn sgemm_on_calling_thread(
        (m, n, k): (usize, usize, usize),
        alpha: f32,
        (a, rs_a, cs_a): (*const f32, usize, usize),
        (b, rs_b, cs_b): (*const f32, usize, usize),
        beta: f32,
        (c, rs_c, cs_c): (*mut f32, usize, usize),
    ) -> bool {
        if !has_known_runtime_layout() {
            return false;
        }
        // `bli_rntm_set_num_threads(1, …)` on `BLIS_RNTM_INITIALIZER`.
        let runtime = Runtime {
            auto_factor: true,
            num_threads: 1,
            thrloop: [-1; 6],
            pack_a: false,
            pack_b: false,
            l3_sup: true,
            sba_pool: std::ptr::null_mut(),
            pba: std::ptr::null_mut(),
        };
        const NO_TRANSPOSE: i32 = 0;
        let i = |v: usize| v as i64;
        // SAFETY: the caller guarantees the operands; BLIS copies `runtime` before using it.
        unsafe {
            bli_sgemm_ex(
                NO_TRANSPOSE,
                NO_TRANSPOSE,
                i(m),
                i(n),
                i(k),
                &alpha,
                a,
                i(rs_a),
                i(cs_a),
                b,
                i(rs_b),
                i(cs_b),
                &beta,
                c,
                i(rs_c),
                i(cs_c),
                std::ptr::null(),
                &runtime,
            );
        }
        true
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

/// Lets the BLAS use `threads` threads per call, process-wide. Call it before any product
/// runs: the bits of a product can depend on the thread count (changing it while the reference
/// path ran on another thread changed that path's results here).
pub fn configure(threads: usize) {
    #[cfg(mlx_blas = "blis")]
    blis::configure(threads.max(1));
    #[cfg(not(mlx_blas = "blis"))]
    let _ = threads;
}

/// `c = alpha · a b + beta · c` for `a: m × k`, `b: k × n`, `c: m × n` given by element
/// pointers and strides (element `(i, j)` of `a` at `a + i·rs_a + j·cs_a`), computed on the
/// calling thread alone whatever [`configure`] set, and without changing what other threads'
/// BLAS calls use. For callers that spread their own products over the cores. Returns `false`,
/// computing nothing, when the linked BLAS has no per-call thread count this crate knows
/// (BLIS 0.9.0 with 64-bit integers has); then use `cblas_sgemm`.
///
/// # Safety
/// Every element the extents and strides address lies in live memory of its operand; `c`'s
/// elements are distinct and writable and overlap neither `a` nor `b`.
pub unsafe fn sgemm_on_calling_thread(
    mnk: (usize, usize, usize),
    alpha: f32,
    a: (*const f32, usize, usize),
    b: (*const f32, usize, usize),
    beta: f32,
    c: (*mut f32, usize, usize),
) -> bool {
    #[cfg(mlx_blas = "blis")]
    // SAFETY: forwarded from the caller.
    return unsafe { blis::sgemm_on_calling_thread(mnk, alpha, a, b, beta, c) };
    #[cfg(not(mlx_blas = "blis"))]
    {
        let _ = (mnk, alpha, a, b, beta, c);
        false
    }
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
