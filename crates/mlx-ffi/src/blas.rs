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
    use std::ptr;
    // SAFETY: `dlsym` with the `RTLD_DEFAULT` pseudo-handle only searches the objects already
    // loaded; the name is a NUL-terminated literal. The result is only used as an address.
    let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"cblas_sgemm".as_ptr()) };
    if symbol.is_null() {
        return None;
    }
    let mut info = libc::Dl_info {
        dli_fname: ptr::null(),
        dli_fbase: ptr::null_mut(),
        dli_sname: ptr::null(),
        dli_saddr: ptr::null_mut(),
    };
    // SAFETY: `dladdr` only reads the address (it never dereferences it) and writes the four
    // fields of `info` through the exclusive pointer.
    if unsafe { libc::dladdr(symbol, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: on success `dli_fname` (checked non-null above) is the NUL-terminated path of the
    // object that holds `symbol`, owned by the dynamic linker while that object stays loaded; it
    // is copied out here, before returning. `RTLD_DEFAULT` finds symbols only in the global
    // scope: the executable and the libraries loaded with it (libmlx, which this crate links, and
    // its BLAS among them), which are never unloaded, or a library another part of the process
    // opened with `RTLD_GLOBAL`. Unloading such a library while its symbols may be in use is
    // already unsound for that other code (opening one is `unsafe` in Rust for that reason).
    let path = unsafe { CStr::from_ptr(info.dli_fname) };
    Some(path.to_string_lossy().into_owned().into())
}
