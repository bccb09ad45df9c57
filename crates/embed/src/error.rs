//! The crate's error type.

use std::path::PathBuf;
use vision::ErrorKind;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What stops an embed job. An image that cannot be read is not one: it is recorded in the
/// output and the job goes on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Loading the encoder or encoding a batch failed.
    #[error(transparent)]
    Vision(#[from] vision::Error),
    /// Writing a shard failed, or a tensor operation did.
    #[error(transparent)]
    Tensor(#[from] tensor::Error),
    /// The image source names no image, does not exist, or is not a source (a directory, a
    /// glob pattern, a `.txt` list).
    #[error("{}: {detail}", path.display())]
    Source { path: PathBuf, detail: String },
    /// Reading the output directory, a list file or a source directory failed.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A shard in the output directory is of another job (another encoder, budget or format)
    /// or not a shard this job can read: mixing them would make the output mean two things.
    #[error("{}: {detail}", path.display())]
    Shard { path: PathBuf, detail: String },
    /// The shard writer was handed features that do not fit the job (a caller's bug, or an
    /// encoder that returned another shape than it promised).
    #[error("{0}")]
    Features(String),
}

impl Error {
    /// The kind of failure, as `vision` classifies its own (an exception class, an exit
    /// status): a missing source or directory is [`ErrorKind::NotFound`], a source or output
    /// that cannot be read [`ErrorKind::Unreadable`], a foreign shard or a bad source
    /// [`ErrorKind::Invalid`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Vision(e) => e.kind(),
            Error::Tensor(e) => vision::Error::kind_of_tensor(e),
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            Error::Io { .. } => ErrorKind::Unreadable,
            Error::Source { path, .. } if !path.exists() && !is_pattern(path) => ErrorKind::NotFound,
            Error::Source { .. } | Error::Shard { .. } => ErrorKind::Invalid,
            Error::Features(_) => ErrorKind::Compute,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }

    pub(crate) fn source(path: impl Into<PathBuf>, detail: impl Into<String>) -> Error {
        Error::Source { path: path.into(), detail: detail.into() }
    }

    pub(crate) fn shard(path: impl Into<PathBuf>, detail: impl Into<String>) -> Error {
        Error::Shard { path: path.into(), detail: detail.into() }
    }
}

/// Whether `path` reads as a glob pattern rather than a file name.
pub(crate) fn is_pattern(path: &std::path::Path) -> bool {
    path.to_str().is_some_and(|p| p.contains(['*', '?', '[']))
}
