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
    /// A weight is missing, mis-shaped, of the wrong dtype, or left unused; or a block's input
    /// did not fit. Never [`layers::Error::Tensor`]: an MLX failure is always [`Error::Tensor`].
    #[error(transparent)]
    Layers(layers::Error),
    /// An image could not be decoded or prepared.
    #[error(transparent)]
    Preprocess(#[from] preprocess::Error),
    /// A model named by Hub repository could not be found or fetched: the error names the
    /// model (`org/name@revision`) and what to do.
    #[error(transparent)]
    Hub(#[from] hub::Error),
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
    /// Two stored tensors have the same sanitized name (`first` and `second` as stored), e.g.
    /// `model.vision_tower.x` beside `vision_tower.x`.
    #[error("`{first}` and `{second}` both name the tensor `{name}`")]
    DuplicateTensor { name: String, first: String, second: String },
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
    /// A model input (mlx-vlm's `pixel_values`, position ids) of a shape, dtype or kind the
    /// encoder does not take: `input` names it, `expected` says what it takes.
    #[error("{input}: expected {expected}, found {found}")]
    ModelInput { input: &'static str, expected: String, found: String },
    /// Weights another runtime holds (mlx-vlm's model) are not the checkpoint's the encoder
    /// loaded: `name` (a sanitized tensor name) is missing on one side, or differs in dtype,
    /// shape or bytes, as `detail` says.
    #[error("the model's `{name}` is not the checkpoint's: {detail}")]
    WeightsDiffer { name: String, detail: String },
    /// The encoder's attention over `what` (a batch, or an image at a budget) would need more
    /// memory than one array may take ([`tensor::memory::max_array_bytes`]); refused before
    /// anything is allocated. The one bound: `SiglipVisionTower::check_attention`.
    #[error("attention over {what} needs about {bytes} bytes, more than the limit of {limit} bytes")]
    TooLarge { what: String, bytes: u128, limit: usize },
}

/// What kind of failure an [`Error`] is, for callers that map errors onto another error model
/// (an exception class, an exit status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A file or directory that was named does not exist.
    NotFound,
    /// A file exists but could not be read, or was read but is not an image that decodes.
    Unreadable,
    /// An input, a parameter or a checkpoint the encoder cannot serve: malformed image bytes or
    /// pixels, a budget too small for an image, a malformed config or weights.
    Invalid,
    /// MLX failed while computing.
    Compute,
}

impl From<layers::Error> for Error {
    /// An MLX failure inside a layer becomes [`Error::Tensor`], so that it has one form.
    fn from(error: layers::Error) -> Error {
        match error {
            layers::Error::Tensor(e) => Error::Tensor(e),
            other => Error::Layers(other),
        }
    }
}

impl Error {
    pub(crate) fn input(what: impl Into<String>) -> Error {
        Error::Input { what: what.into() }
    }

    /// The kind of a [`tensor::Error`], as [`Error::Tensor`] would have it (for crates above
    /// this one that wrap tensor errors of their own).
    pub fn kind_of_tensor(error: &tensor::Error) -> ErrorKind {
        tensor_kind(error)
    }

    /// The kind of a [`preprocess::Error`], as [`Error::Preprocess`] would have it.
    pub fn kind_of_preprocess(error: &preprocess::Error) -> ErrorKind {
        preprocess_kind(error)
    }

    /// The kind of this error. A checkpoint file reported missing or unreadable is
    /// [`ErrorKind::NotFound`] when its path does not exist (now), else [`ErrorKind::Unreadable`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Tensor(e) | Error::Weight { source: layers::Error::Tensor(e), .. } => tensor_kind(e),
            Error::Layers(_)
            | Error::Weight { .. }
            | Error::DuplicateTensor { .. }
            | Error::Config { .. }
            | Error::NoVisionTower { .. }
            | Error::Quantization { .. }
            | Error::Input { .. }
            | Error::ModelInput { .. }
            | Error::WeightsDiffer { .. }
            | Error::TooLarge { .. } => ErrorKind::Invalid,
            Error::Preprocess(e) => preprocess_kind(e),
            Error::Hub(e) => match e.kind() {
                hub::ErrorKind::NotFound => ErrorKind::NotFound,
                hub::ErrorKind::Environment => ErrorKind::Invalid,
                _ => ErrorKind::Unreadable,
            },
            Error::Checkpoint { path, .. } => match std::fs::symlink_metadata(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => ErrorKind::NotFound,
                _ => ErrorKind::Unreadable,
            },
        }
    }
}

fn io_kind(e: &std::io::Error) -> ErrorKind {
    if e.kind() == std::io::ErrorKind::NotFound { ErrorKind::NotFound } else { ErrorKind::Unreadable }
}

fn tensor_kind(e: &tensor::Error) -> ErrorKind {
    match e {
        tensor::Error::Io { source, .. } => io_kind(source),
        tensor::Error::Format { .. } | tensor::Error::TooLarge { .. } => ErrorKind::Invalid,
        _ => ErrorKind::Compute,
    }
}

/// Reading a file is I/O; a file read but not decoded is unreadable; the rest is bad input.
fn preprocess_kind(e: &preprocess::Error) -> ErrorKind {
    match e {
        preprocess::Error::Io { source, .. } => io_kind(source),
        preprocess::Error::File { .. } => ErrorKind::Unreadable,
        _ => ErrorKind::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing_config() -> PathBuf {
        std::env::temp_dir().join("vision-error-kind-missing").join("config.json")
    }

    #[test]
    fn kinds_follow_what_failed() {
        let missing = std::env::temp_dir().join("vision-error-kind-missing");
        let checkpoint = |path: PathBuf| Error::Checkpoint { path, detail: "missing".into() };
        assert_eq!(checkpoint(missing.clone()).kind(), ErrorKind::NotFound);
        assert_eq!(checkpoint(std::env::temp_dir()).kind(), ErrorKind::Unreadable);
        let io = |kind| preprocess::Error::Io { path: missing.clone(), source: std::io::Error::from(kind) };
        assert_eq!(Error::from(io(std::io::ErrorKind::NotFound)).kind(), ErrorKind::NotFound);
        assert_eq!(Error::from(io(std::io::ErrorKind::PermissionDenied)).kind(), ErrorKind::Unreadable);
        let file = preprocess::Error::File { path: missing.clone(), source: Box::new(preprocess::Error::Empty) };
        assert_eq!(Error::from(file).kind(), ErrorKind::Unreadable);
        assert_eq!(Error::from(preprocess::Error::Empty).kind(), ErrorKind::Invalid);
        assert_eq!(Error::input("no images").kind(), ErrorKind::Invalid);
        let weights = layers::Error::Missing { name: "w".into() };
        assert_eq!(Error::from(weights).kind(), ErrorKind::Invalid);
        let tensor_io = tensor::Error::Io { path: missing, source: std::io::ErrorKind::NotFound.into() };
        let from_layers = Error::from(layers::Error::Tensor(tensor_io));
        assert!(matches!(from_layers, Error::Tensor(_)), "an MLX error has one form: {from_layers:?}");
        assert_eq!(from_layers.kind(), ErrorKind::NotFound);
        let unreadable =
            tensor::Error::Io { path: std::env::temp_dir(), source: std::io::ErrorKind::PermissionDenied.into() };
        let weight = Error::Weight { files: vec![], source: layers::Error::Tensor(unreadable) };
        assert_eq!(weight.kind(), ErrorKind::Unreadable);
        let no_tower = Error::NoVisionTower { path: missing_config(), detail: "null".into() };
        assert_eq!(no_tower.kind(), ErrorKind::Invalid);
        let shape = tensor::Error::Shape { op: "reshape", detail: "bad".into() };
        assert_eq!(Error::from(shape).kind(), ErrorKind::Compute);
    }
}
