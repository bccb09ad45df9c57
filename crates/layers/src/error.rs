//! The crate's error type.

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong loading or running a block.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An MLX operation or a file access failed.
    #[error(transparent)]
    Tensor(#[from] tensor::Error),
    /// A host kernel refused its arguments.
    #[error(transparent)]
    Kernel(#[from] kernels::Error),
    /// A weight the block needs is not in the store (`name` is the full key).
    #[error("weight `{name}` is missing")]
    Missing { name: String },
    /// A weight has another shape than the block's dimensions require.
    #[error("weight `{name}` has shape {actual:?}, expected {expected:?}")]
    Shape { name: String, expected: Vec<i32>, actual: Vec<i32> },
    /// A weight has a dtype the block cannot use (`actual` may be a file dtype MLX lacks, e.g. `F8_E4M3`).
    #[error("weight `{name}` has dtype {actual}, expected {expected}")]
    Dtype { name: String, expected: String, actual: String },
    /// Weights of the store that no block asked for (full keys, sorted).
    #[error("{} unused weight(s): {}", names.len(), names.join(", "))]
    Unused { names: Vec<String> },
    /// An input of `forward` does not fit the block (`what` says which input and why).
    #[error("{block}: {what}")]
    Input { block: &'static str, what: String },
    /// Block dimensions that the reference's arithmetic cannot serve (e.g. a head dimension
    /// that the RoPE partitions do not divide).
    #[error("{block}: {what}")]
    Config { block: &'static str, what: String },
}
