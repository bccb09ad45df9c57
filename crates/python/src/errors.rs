//! Errors as Python exceptions, with the messages the `gemma-vision` command prints.

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::{PyErr, PyResult};
use std::panic::{AssertUnwindSafe, catch_unwind};
use vision::ErrorKind;

/// `FileNotFoundError` for a missing file, `OSError` for a file that cannot be read or decoded,
/// `ValueError` for an input or a checkpoint the encoder cannot serve, `RuntimeError` for a
/// failure inside MLX. `str(exception)` is the message the command prints after `error: `.
pub fn to_python(error: vision::Error) -> PyErr {
    to_python_as(error.kind(), error.to_string())
}

/// The exception of `kind` carrying `message`.
pub fn to_python_as(kind: ErrorKind, message: String) -> PyErr {
    match kind {
        ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
        ErrorKind::Unreadable => PyOSError::new_err(message),
        ErrorKind::Invalid => PyValueError::new_err(message),
        ErrorKind::Compute => PyRuntimeError::new_err(message),
    }
}

/// `f()`, with a panic inside it (GIL held or released) raised as `RuntimeError` naming it,
/// never as pyo3's `PanicException`: that one derives from `BaseException`, which servers and
/// `except Exception` handlers let through, so one bad request would end the process. Every
/// entry point of the extension that computes runs inside this.
pub fn catching_panics<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        Err(PyRuntimeError::new_err(format!("internal error (a panic in gemma_vision): {message}")))
    })
}
