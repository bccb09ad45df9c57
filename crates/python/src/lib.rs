//! `gemma_vision._native`: the Python extension behind the `gemma_vision` package.
//!
//! [`Encoder`](encoder::Encoder) wraps a [`vision::VisionEncoder`]: images in (paths, encoded
//! bytes, `uint8` arrays), one NumPy array of soft tokens per image out, the GIL released while
//! decoding and encoding. Errors become Python exceptions by [`vision::ErrorKind`]
//! ([`errors`]); Python objects become images in [`inputs`], features become arrays in
//! [`arrays`].

mod arrays;
mod encoder;
mod errors;
mod inputs;

use pyo3::prelude::*;

/// Keeps freed memory mapped for reuse instead of returning it to the system, process-wide
/// and for good (glibc only; see `tensor::memory::retain_freed_host_memory`). Returns whether
/// the C library accepted it.
#[pyfunction]
fn retain_freed_host_memory() -> bool {
    tensor::memory::retain_freed_host_memory()
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<encoder::Encoder>()?;
    module.add_function(wrap_pyfunction!(retain_freed_host_memory, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
