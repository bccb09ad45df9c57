//! The crate's error type.

use std::path::PathBuf;

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong loading a checkpoint or encoding images.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An MLX operation or a file access failed.
    #[error(transparent)]
    Tensor(#[from] tensor::Error),
    /// A weight is missing, mis-shaped, of the wrong dtype, or left unused; or a block failed.
    #[error(transparent)]
    Layers(#[from] layers::Error),
    /// An image could not be decoded or prepared.
    #[error(transparent)]
    Preprocess(#[from] preprocess::Error),
    /// A file of the checkpoint is missing or unreadable.
    #[error("{}: {detail}", path.display())]
    Checkpoint { path: PathBuf, detail: String },
    /// `config.json` is malformed or holds values the encoders cannot serve.
    #[error("{}: `{field}`: {detail}", path.display())]
    Config { path: PathBuf, field: String, detail: String },
    /// An input does not fit the encoder (shape, dtype, count).
    #[error("{what}")]
    Input { what: String },
    /// The encoder's attention over `what` would need more memory than one process may use
    /// ([`tensor::memory::max_array_bytes`]); refused before anything is allocated.
    #[error("attention over {what} needs about {bytes} bytes, more than the limit of {limit} bytes")]
    TooLarge { what: String, bytes: u128, limit: usize },
}

impl Error {
    pub(crate) fn input(what: impl Into<String>) -> Error {
        Error::Input { what: what.into() }
    }
}
