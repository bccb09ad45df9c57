//! [`Execution`]: who computes a block's ops.

/// Who computes a block: MLX's ops, or the `kernels` crate on the host. Both give the same
/// bits on MLX's CPU backend; the host kernels run over every core at near-GEMM speed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Execution {
    /// mlx-vlm's op sequence on MLX, on MLX's default device: any backend, any dtype.
    #[default]
    Mlx,
    /// The `kernels` crate's host kernels, which reproduce the bits of MLX 0.32's CPU
    /// primitives for float32 and bf16 (matmul and addmm with their clips, the RMS and layer
    /// norms, the head norms and RoPE, attention, the tanh GELU, residual adds). The kernels read
    /// and write evaluated arrays' memory, so this is for the CPU backend only. A block whose
    /// operands have another dtype (float16, say) runs [`Mlx`](Self::Mlx) instead.
    Host,
}
