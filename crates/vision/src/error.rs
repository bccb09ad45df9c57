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
    /// The checkpoint has no vision tower: a text-only conversion (`vision_config: null`, or no
    /// vision tensor in its weight files). `path` is the file or directory that shows it.
    #[error("{}: the checkpoint has no vision tower: {detail}", path.display())]
    NoVisionTower { path: PathBuf, detail: String },
    /// A weight is missing, mis-shaped or of the wrong dtype; `files` are the weight files
    /// looked in (the one holding the tensor, or all of them when it is missing).
    #[error("{source} (in {})", files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", "))]
    Weight { files: Vec<PathBuf>, source: layers::Error },
    /// A vision module is stored quantized in a way mlx-vlm 0.7.10 does not load or run
    /// (`module` is its path, e.g. `embed_vision.embedding_projection`).
    #[error("quantized module `{module}`: {detail}")]
    Quantization { module: String, detail: String },
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
