//! [`Arithmetic`]: which computation a block runs.

/// Which computation a block runs: the reference's, bit for bit, or a faster one for float32
/// on MLX's CPU backend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Arithmetic {
    /// mlx-vlm's op sequence on MLX: bit-identical to the reference in every dtype.
    #[default]
    Reference,
    /// For float32 activations on MLX's CPU backend, whose transcendental functions run one
    /// element at a time and its element-wise ops on one core: in attention blocks, the q/k/v
    /// RMS norms, RoPE and attention on the host over every core (`tensor::host::attention`:
    /// tiled or BLAS products, vectorised softmax); the MLP's tanh-GELU and gate product on
    /// the host (`tensor::host::gelu_tanh_mul`); the block's four RMS norms on the host over
    /// every core (`tensor::host::rms_norm_rows`).
    /// Every replaced piece computes the same function as the reference's in float32, within
    /// a few ulps; the output is not bit-identical to [`Reference`](Self::Reference). Each
    /// attention, MLP and norm synchronises once with the host (its input is evaluated).
    HostFloat32,
}
