//! The crate's one error type.

use std::path::PathBuf;

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong between image bytes and encoder inputs. Each variant names what
/// was wrong; none of them is a panic.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is empty.
    #[error("empty input: no image bytes")]
    Empty,
    /// The bytes do not start like any supported format.
    #[error("unrecognised image format (first bytes {magic:02x?})")]
    UnknownFormat { magic: Vec<u8> },
    /// A format Pillow identifies (named as Pillow names it) that this crate does not decode.
    #[error("{format} is not supported")]
    UnsupportedFormat { format: &'static str },
    /// A decoder panicked on this input; the panic was caught and is reported as this error.
    #[error("the {format} decoder failed on this input (it panicked: {message})")]
    DecoderPanic { format: &'static str, message: String },
    /// The format was recognised but its data is malformed.
    #[error("malformed {format} data: {detail}")]
    Malformed { format: &'static str, detail: String },
    /// The data ends before the image does (Pillow raises "image file is truncated").
    #[error("truncated {format} data: {detail}")]
    Truncated { format: &'static str, detail: String },
    /// A valid file of a kind this crate does not decode (bit depth, colour type, ...).
    #[error("unsupported {format} image: {detail}")]
    Unsupported { format: &'static str, detail: String },
    /// The header announces more pixels than [`Limits::max_pixels`](crate::Limits); rejected
    /// before any pixel buffer is allocated.
    #[error("image of {width}x{height} = {pixels} pixels exceeds the limit of {max_pixels} pixels")]
    TooManyPixels { width: u64, height: u64, pixels: u64, max_pixels: u64 },
    /// A file longer than any image within the limits can be, or an endless input; refused
    /// after reading at most `max_bytes` bytes ([`Limits::max_file_bytes`](crate::Limits::max_file_bytes)).
    #[error("more than {max_bytes} bytes: larger than a file holding an image of up to {max_pixels} pixels")]
    TooManyBytes { max_bytes: u64, max_pixels: u64 },
    /// A width or height of zero.
    #[error("zero-size image ({width}x{height})")]
    ZeroSize { width: u64, height: u64 },
    /// `get_aspect_ratio_preserving_size` would raise `ValueError("Attempting to resize to a 0 x 0
    /// image.")`: the budget is too small for the image's aspect ratio in both directions.
    #[error("{height}x{width} image with a budget of {max_patches} patches would resize to 0x0")]
    ZeroTargetSize { height: u64, width: u64, max_patches: u64 },
    /// A parameter out of its domain (a zero patch size, a mismatched buffer).
    #[error("invalid {what}: {detail}")]
    InvalidArgument { what: &'static str, detail: String },
    /// A soft-token budget out of its bounds ([`BudgetError`](crate::BudgetError) names which).
    #[error(transparent)]
    Budget(#[from] crate::BudgetError),
    /// A processor configuration file that cannot be used.
    #[error("{}: {detail}", path.display())]
    Config { path: PathBuf, detail: String },
    /// Reading a file.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// An image file that was read but could not be decoded; `source` says why.
    #[error("{}: {source}", path.display())]
    File { path: PathBuf, source: Box<Error> },
}

impl Error {
    pub(crate) fn malformed(format: &'static str, detail: impl ToString) -> Self {
        Error::Malformed { format, detail: detail.to_string() }
    }

    pub(crate) fn unsupported(format: &'static str, detail: impl ToString) -> Self {
        Error::Unsupported { format, detail: detail.to_string() }
    }

    pub(crate) fn invalid(what: &'static str, detail: impl ToString) -> Self {
        Error::InvalidArgument { what, detail: detail.to_string() }
    }
}
