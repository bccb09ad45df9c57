//! Facts about the MLX this process runs on: its version, the libmlx file, and the BLAS
//! libmlx resolved.

use crate::status::init;
use crate::{Error, Result};
use mlx_ffi as ffi;
use std::path::PathBuf;

/// The version of the MLX library this process runs on (`mlx::core::version()`, e.g.
/// `"0.32.4"`), opening MLX if it is not open yet.
pub fn mlx_version() -> Result<String> {
    init()?;
    Ok(ffi::library().map_err(Error::Unavailable)?.version().to_owned())
}

/// The libmlx file this process runs on (canonical path), opening MLX if it is not open yet.
pub fn mlx_library() -> Result<PathBuf> {
    init()?;
    Ok(ffi::library().map_err(Error::Unavailable)?.libmlx().to_path_buf())
}

/// The MLX version this build of mlx-c was compiled against: the only libmlx it opens.
pub fn mlx_build_version() -> &'static str {
    ffi::BUILD_VERSION
}

/// Opens MLX from the libmlx in `lib_dir` (an MLX install's `lib/`, e.g. the `mlx` wheel's
/// `mlx/lib`) instead of the default location, before anything else uses MLX; a no-op if that
/// file is already open. An error names the file and why it was refused (another MLX release,
/// another install already open).
pub fn open_mlx_from(lib_dir: &std::path::Path) -> Result<()> {
    ffi::open_from(lib_dir).map_err(Error::Unavailable)?;
    init()
}

/// The shared library serving MLX's float32 matmuls on the CPU backend (the one providing
/// `cblas_sgemm` to this process).
pub fn blas_provider() -> Option<PathBuf> {
    init().ok()?;
    ffi::blas::cblas_provider()
}

/// SHA-256 (lowercase hex) of the libmlx file this process runs on: which build of MLX it is,
/// beyond its version (two builds of one release can differ in their CPU arithmetic, e.g.
/// whether the compiler fused multiply-adds). Read once per process.
pub fn mlx_library_sha256() -> Result<String> {
    use sha2::{Digest, Sha256};
    static DIGEST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(digest) = DIGEST.get() {
        return Ok(digest.clone());
    }
    let path = mlx_library()?;
    let bytes = std::fs::read(&path).map_err(|source| Error::Io { path, source })?;
    let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    Ok(DIGEST.get_or_init(|| digest).clone())
}
