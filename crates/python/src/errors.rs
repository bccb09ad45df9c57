//! Errors as Python exceptions, with the messages the `gemma-vision` command prints.

use pyo3::PyErr;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError, PyValueError};
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
