//! [`HostKernel`]: the host kernels the op layer runs, and the per-thread record of which ran.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt;

/// A host kernel of the `kernels` crate that an op of [`ops`](crate::ops) runs in place of MLX's
/// ops, as [`take_kernels_run`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostKernel {
    /// `kernels::gemm`: MLX's `matmul` and `addmm`, with the clips fused.
    Gemm,
    /// `kernels::quantized::quantized_matmul`: MLX's `quantized_matmul(…, transpose=True)`.
    QuantizedMatmul,
    /// `kernels::rms_norm`: MLX's `fast.rms_norm`.
    RmsNorm,
    /// `kernels::layer_norm`: MLX's `fast.layer_norm`.
    LayerNorm,
    /// `kernels::vision_rms_norm`: gemma4's `VisionRMSNorm` op sequence.
    VisionRmsNorm,
    /// `kernels::vision_rms_norm::normalize_heads` with RoPE: `VisionRMSNorm`, then
    /// `apply_multidimensional_rope`, in one pass.
    VisionRmsNormRope,
    /// `kernels::attention`: MLX's `fast.scaled_dot_product_attention` on the CPU.
    Attention,
    /// `kernels::gelu`: `gelu_approx(gate) * up`.
    Gelu,
    /// `kernels::elementwise::add`: MLX's `add` of two arrays of one dtype and shape.
    Add,
}

impl HostKernel {
    /// The kernel's name in reports (`"gemm"`, `"quantized_matmul"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            HostKernel::Gemm => "gemm",
            HostKernel::QuantizedMatmul => "quantized_matmul",
            HostKernel::RmsNorm => "rms_norm",
            HostKernel::LayerNorm => "layer_norm",
            HostKernel::VisionRmsNorm => "vision_rms_norm",
            HostKernel::VisionRmsNormRope => "vision_rms_norm+rope",
            HostKernel::Attention => "attention",
            HostKernel::Gelu => "gelu",
            HostKernel::Add => "add",
        }
    }
}

impl fmt::Display for HostKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

thread_local! {
    static KERNELS_RUN: RefCell<BTreeSet<HostKernel>> = const { RefCell::new(BTreeSet::new()) };
}

/// Records that `kernel` ran for an op called on this thread.
pub(crate) fn record(kernel: HostKernel) {
    KERNELS_RUN.with(|run| run.borrow_mut().insert(kernel));
}

/// The host kernels that ran for ops called on this thread since the last call, in
/// [`HostKernel`]'s order; the record is emptied.
pub fn take_kernels_run() -> Vec<HostKernel> {
    KERNELS_RUN.with(|run| std::mem::take(&mut *run.borrow_mut())).into_iter().collect()
}
