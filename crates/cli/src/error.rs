//! [`Error`]: why a command failed, with the library's error (and its kind) kept.

use vision::ErrorKind;

/// A command's failure. Each variant keeps the error of the library that failed, so its
/// [`kind`](Error::kind) survives to the edge; the command prints its message as one line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Loading a checkpoint or encoding.
    #[error(transparent)]
    Vision(#[from] vision::Error),
    /// The corpus job.
    #[error(transparent)]
    Embed(#[from] embed::Error),
    /// Decoding or preparing an image.
    #[error(transparent)]
    Preprocess(#[from] preprocess::Error),
    /// An MLX operation, or writing an output file.
    #[error(transparent)]
    Tensor(#[from] tensor::Error),
}

impl Error {
    /// What kind of failure this is (a missing file, an unreadable one, an input or checkpoint
    /// the encoder cannot serve, a failure inside MLX), as the library classifies it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Vision(e) => e.kind(),
            Error::Embed(e) => e.kind(),
            Error::Preprocess(e) => vision::Error::kind_of_preprocess(e),
            Error::Tensor(e) => vision::Error::kind_of_tensor(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_kind_survives_to_the_command() {
        let missing = std::env::temp_dir().join("cli-error-kind-missing");
        let source = embed::list_images(&missing).unwrap_err();
        assert_eq!(Error::from(source).kind(), ErrorKind::NotFound);
        let no_model = vision::VisionEncoder::load(&missing, vision::EncoderOptions::default()).unwrap_err();
        assert_eq!(Error::from(no_model).kind(), ErrorKind::NotFound);
        assert_eq!(Error::from(preprocess::Error::Empty).kind(), ErrorKind::Invalid);
        let mlx = tensor::Error::Shape { op: "reshape", detail: "bad".into() };
        assert_eq!(Error::from(mlx).kind(), ErrorKind::Compute);
    }
}
