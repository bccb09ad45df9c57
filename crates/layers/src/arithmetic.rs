//! [`Arithmetic`]: which computation a block runs.

/// Which computation a block runs: the reference's, bit for bit, or a faster one for float32
/// on MLX's CPU backend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Arithmetic {
    /// mlx-vlm's op sequence on MLX: bit-identical to the reference in every dtype.
    #[default]
    Reference,
    /// For float32 activations on MLX's CPU backend, whose transcendental functions run one
    /// element at a time: attention by [`HostAttention`](crate::HostAttention) (BLAS products,
    /// vectorised softmax), the MLP's tanh-GELU and gate product on the host
    /// (`tensor::host::gelu_tanh_mul`), and the q/k/v norms by the fused RMS-norm kernel.
    /// Every replaced piece computes the same function as the reference's in float32, within
    /// a few ulps; the output is not bit-identical to [`Reference`](Self::Reference). Each
    /// attention and each MLP synchronises once with the host (their inputs are evaluated).
    HostFloat32,
}
