//! The op layer: every op of the blocks that a host kernel can compute, each taking the
//! [`Execution`](crate::Execution) its block was loaded with, and the operands they take
//! ([`ClipBounds`], [`RopeTables`]). This is the one place where MLX's ops and the `kernels`
//! crate's host kernels are chosen between, by one policy (`dispatch`): each op's documented
//! contract is checked under both executions, so a call fails or succeeds the same way under
//! either; then the host kernels run when every operand's dtype is one they take. The op layer
//! imports nothing from the blocks above it.
//!
//! Each op states the MLX op sequence it stands for (what it computes with
//! [`Execution::Mlx`](crate::Execution::Mlx), on any backend and dtype). With
//! [`Execution::Host`](crate::Execution::Host) it computes the same bits with host kernels when
//! every operand is float32 or bf16, fusing neighbouring MLX ops into one kernel only where
//! MLX's dtype promotions make the fused bits provably the same, and running the remaining ops
//! separately; with other dtypes it runs the MLX sequence. Every kernel run is recorded
//! ([`take_kernels_run`]).
//!
//! | op | MLX ops | host kernel |
//! |---|---|---|
//! | [`linear`] | `[clip] → matmul \| addmm → [clip]` | `kernels::gemm` |
//! | [`quantized_linear`] | `[clip] → quantized_matmul → [+ bias] → [clip]` | `kernels::quantized` |
//! | [`matmul`] | `matmul` | `kernels::gemm` |
//! | [`contract_tokens`] | `einsum("bLl,bLd->bld")` | `kernels::gemm` |
//! | [`rms_norm`] | `fast.rms_norm` | `kernels::rms_norm` |
//! | [`layer_norm`] | `fast.layer_norm` | `kernels::layer_norm` |
//! | [`vision_rms_norm`] | `VisionRMSNorm` `[→ apply_multidimensional_rope]` | `kernels::vision_rms_norm` |
//! | [`sdpa`] | `ensure_fused_sdpa` between head transposes | `kernels::attention` |
//! | [`gelu_mul`] | `gelu_approx(gate) * up` | `kernels::gelu` |
//! | [`add`] | `add` | `kernels::elementwise` |

mod add;
mod clip_bounds;
mod contract;
mod contract_tokens;
pub(crate) mod dispatch;
mod fused_sdpa;
mod gelu_approx;
mod gelu_mul;
pub(crate) mod host;
pub(crate) mod host_kernel;
mod layer_norm;
mod linear;
mod matmul;
mod quantized_linear;
mod rms_norm;
mod rope;
mod sdpa;
mod vision_rms_norm;

pub use add::add;
pub use clip_bounds::ClipBounds;
pub use contract_tokens::contract_tokens;
pub use fused_sdpa::{FUSED_HEAD_DIMS, ensure_fused_sdpa};
pub use gelu_approx::gelu_approx;
pub use gelu_mul::gelu_mul;
pub use host_kernel::{HostKernel, take_kernels_run};
pub use layer_norm::layer_norm;
pub use linear::linear;
pub use matmul::matmul;
pub use quantized_linear::{QuantizedWeight, quantized_linear};
pub use rms_norm::rms_norm;
pub use rope::{RopeTables, rotate_half};
pub use sdpa::sdpa;
pub use vision_rms_norm::{VISION_RMS_NORM_EPS, vision_rms_norm};
