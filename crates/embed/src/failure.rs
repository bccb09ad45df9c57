//! [`Failure`]: why one image was not embedded, as the job records it.

use crate::shard::FailureKind;
use std::path::Path;
use std::time::Duration;

/// One image's failure: its kind and the message recorded for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    /// A failure of [`preprocess::open`]: the message is the error's own (the one `gemma-vision
    /// encode` prints for the file), the kind follows the error inside [`preprocess::Error::File`].
    pub fn of_open(error: &preprocess::Error) -> Failure {
        Failure { kind: open_kind(error), message: error.to_string() }
    }

    /// A failure of the encoder's preparation of a decoded image.
    pub fn of_prepare(path: &Path, error: &vision::Error) -> Failure {
        Failure { kind: FailureKind::Prepare, message: format!("{}: {error}", path.display()) }
    }

    /// A failure of the encoder on the image alone.
    pub fn of_encode(path: &str, error: &vision::Error) -> Failure {
        Failure { kind: FailureKind::Encode, message: format!("{path}: encoding failed: {error}") }
    }

    /// A panic caught while `doing` (a verb phrase: "decoding", "preparing") the image.
    pub fn of_panic(path: &str, doing: &str, message: &str) -> Failure {
        Failure { kind: FailureKind::Panic, message: format!("{path}: panicked while {doing}: {message}") }
    }

    /// Reading and decoding the file did not end within `limit`.
    pub fn timeout(path: &Path, limit: Duration) -> Failure {
        Failure {
            kind: FailureKind::Timeout,
            message: format!(
                "{}: reading and decoding took longer than the per-file bound of {} s",
                path.display(),
                limit.as_secs_f64()
            ),
        }
    }
}

/// The kind of an error of [`preprocess::open`] (a decoding error arrives wrapped in
/// [`preprocess::Error::File`]).
fn open_kind(error: &preprocess::Error) -> FailureKind {
    use preprocess::Error as E;
    match error {
        E::File { source, .. } => open_kind(source),
        E::Io { .. } => FailureKind::Unreadable,
        E::Empty | E::UnknownFormat { .. } => FailureKind::UnknownFormat,
        E::UnsupportedFormat { .. } | E::Unsupported { .. } => FailureKind::UnsupportedFormat,
        E::TooManyPixels { .. } | E::TooManyBytes { .. } => FailureKind::TooLarge,
        E::DecoderPanic { .. } => FailureKind::DecoderPanic,
        _ => FailureKind::Malformed,
    }
}

/// The text of a caught panic's payload (`panic!` with a literal or a formatted message).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn in_file(source: preprocess::Error) -> preprocess::Error {
        preprocess::Error::File { path: PathBuf::from("x"), source: Box::new(source) }
    }

    #[test]
    fn open_errors_are_classified_by_the_error_inside_the_file() {
        let cases = [
            (preprocess::Error::UnknownFormat { magic: vec![0] }, FailureKind::UnknownFormat),
            (preprocess::Error::Empty, FailureKind::UnknownFormat),
            (preprocess::Error::UnsupportedFormat { format: "PSD" }, FailureKind::UnsupportedFormat),
            (
                preprocess::Error::TooManyPixels { width: 9, height: 9, pixels: 81, max_pixels: 80 },
                FailureKind::TooLarge,
            ),
            (preprocess::Error::TooManyBytes { max_bytes: 1, max_pixels: 1 }, FailureKind::TooLarge),
            (preprocess::Error::DecoderPanic { format: "TIFF", message: "x".into() }, FailureKind::DecoderPanic),
            (preprocess::Error::Truncated { format: "PNG", detail: "x".into() }, FailureKind::Malformed),
        ];
        for (error, kind) in cases {
            let expected = format!("x: {error}");
            let failure = Failure::of_open(&in_file(error));
            assert_eq!((failure.kind, failure.message), (kind, expected));
        }
        let io = preprocess::Error::Io { path: PathBuf::from("x"), source: std::io::ErrorKind::NotFound.into() };
        assert_eq!(Failure::of_open(&io).kind, FailureKind::Unreadable);
    }
}
