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
    /// BLAS products, vectorised softmax); the MLP's tanh-GELU and gate product on the host
    /// (`tensor::host::gelu_tanh_mul`).
    /// Every replaced piece computes the same function as the reference's in float32, within
    /// a few ulps; the output is not bit-identical to [`Reference`](Self::Reference). Each
    /// attention and each MLP synchronises once with the host (their inputs are evaluated).
    HostFloat32,
}
