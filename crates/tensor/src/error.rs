//! The crate's error type.

use crate::Dtype;
use std::panic::Location;
use std::path::PathBuf;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong between Rust and MLX.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// MLX could not be opened (no libmlx, another MLX release, mlx-c not loadable).
    #[error("MLX is unavailable: {0}")]
    Unavailable(#[source] mlx_ffi::LoadError),
    /// MLX rejected an operation; `message` is MLX's own text.
    #[error("{op} (at {location}): {message}")]
    Mlx { op: &'static str, message: String, location: &'static Location<'static> },
    /// Host data of one dtype was requested from an array of another.
    #[error("{op}: expected dtype {expected}, found {actual}")]
    Dtype { op: &'static str, expected: Dtype, actual: Dtype },
    /// Host data does not fill the requested shape, or a shape is not representable.
    #[error("{op}: {detail}")]
    Shape { op: &'static str, detail: String },
    /// An operation's result would not fit in memory (more bytes than [`memory::max_array_bytes`]).
    ///
    /// [`memory::max_array_bytes`]: crate::memory::max_array_bytes
    #[error("{op}: a {dtype} array of shape {shape:?} exceeds the {limit}-byte limit for one array")]
    TooLarge { op: &'static str, shape: Vec<i32>, dtype: Dtype, limit: usize },
    /// MLX reported a dtype this crate does not model.
    #[error("unsupported MLX dtype code {0}")]
    UnsupportedDtype(u32),
    /// Reading or writing a file.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A safetensors file is malformed, or a checkpoint index is.
    #[error("{}: {detail}", path.display())]
    Format { path: PathBuf, detail: String },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    pub(crate) fn format(path: impl Into<PathBuf>, detail: impl Into<String>) -> Self {
        Error::Format { path: path.into(), detail: detail.into() }
    }
}
