//! [`Error`]: what a kernel refuses.

use crate::quantized::QuantizationMode;

/// A kernel's refusal of its arguments (extents that do not fit the slices, a shape or a
/// quantization it does not serve). Kernels never panic on bad arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Slices or extents that do not agree.
    #[error("{kernel}: {what}")]
    Shape { kernel: &'static str, what: String },
    /// A mode, bits and group size MLX does not quantize with (see
    /// [`Quantization`](crate::quantized::Quantization)).
    #[error("{mode} with group size {group_size} and {bits} bits: MLX supports {}", .mode.served())]
    Quantization { mode: QuantizationMode, bits: usize, group_size: usize },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A [`Error::Shape`] of `kernel`.
    pub(crate) fn shape(kernel: &'static str, what: impl Into<String>) -> Error {
        Error::Shape { kernel, what: what.into() }
    }
}
