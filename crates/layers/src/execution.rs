//! [`Execution`]: who computes the ops of a block.

/// Who computes a block's ops: MLX's ops, or the `kernels` crate on the host. Both give the
/// same bits on MLX's CPU backend; the host kernels run over every core at near-GEMM speed.
///
/// Chosen once, at load: it rides on [`Weights`](crate::Weights) (as the compute dtype does) and
/// every block keeps the execution of the view it was loaded from. Blocks built from parts take
/// it in their constructor. The choice between the two is made in one place, the op layer
/// ([`ops`](crate::ops)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Execution {
    /// mlx-vlm's op sequence on MLX, on MLX's default device: any backend, any dtype.
    #[default]
    Mlx,
    /// The `kernels` crate's host kernels, which reproduce the bits of MLX 0.32's CPU
    /// primitives for float32 and bf16 (matmul and addmm with their clips, quantized matmul, the
    /// RMS and layer norms, the head norms and RoPE, attention, the tanh GELU, residual adds).
    /// The kernels read and write evaluated arrays' memory, so this is for the CPU backend only.
    /// An op whose operands have another dtype (float16, say) runs MLX's ops instead.
    Host,
}
