//! `gemma_vision._native`: the Python extension behind the `gemma_vision` package.
//!
//! [`Encoder`](encoder::Encoder) wraps a [`vision::VisionEncoder`]: images in (paths, encoded
//! bytes, `uint8` arrays), one NumPy array of soft tokens per image out, the GIL released while
//! decoding and encoding. Errors become Python exceptions by [`vision::ErrorKind`]
//! ([`errors`]); Python objects become images in [`inputs`], features become arrays in
//! [`arrays`]. Inside mlx-vlm: its pixel inputs become [`vision::ModelInputs`] in
//! [`model_inputs`] (arrays read by [`mlx_arrays`]), features go back as `mx.array`s, and its
//! model's vision parameters are compared in place ([`held_parameters`], [`borrowed_bytes`]).

mod arrays;
mod borrowed_bytes;
mod embed_job;
mod encoder;
mod errors;
mod held_parameters;
mod inputs;
mod mlx_arrays;
mod model_inputs;

use pyo3::prelude::*;

/// Keeps freed memory mapped for reuse instead of returning it to the system, process-wide
/// and for good (glibc only; see `tensor::memory::retain_freed_host_memory`). Returns whether
/// the C library accepted it.
#[pyfunction]
fn retain_freed_host_memory() -> bool {
    tensor::memory::retain_freed_host_memory()
}

/// Opens MLX from the libmlx in `lib_dir` (the `mlx` wheel's `mlx/lib`), before any encoder
/// exists; raises ImportError naming the file and, for another MLX release, both versions.
/// Returns libmlx's version.
#[pyfunction]
fn open_mlx(lib_dir: std::path::PathBuf) -> PyResult<String> {
    tensor::info::open_mlx_from(&lib_dir)
        .and_then(|()| tensor::info::mlx_version())
        .map_err(|e| pyo3::exceptions::PyImportError::new_err(format!("gemma_vision cannot use MLX: {e}")))
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<encoder::Encoder>()?;
    module.add_function(wrap_pyfunction!(retain_freed_host_memory, module)?)?;
    module.add_function(wrap_pyfunction!(open_mlx, module)?)?;
    module.add_function(wrap_pyfunction!(embed_job::embed, module)?)?;
    module.add("MLX_BUILD_VERSION", tensor::info::mlx_build_version())?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
