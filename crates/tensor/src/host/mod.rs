//! Host kernels over the memory of evaluated float32 arrays, for the CPU fast path.
//!
//! MLX's CPU backend evaluates transcendental functions one element at a time (`exp` ~20–30 ns
//! per element here), which makes attention's softmax and the MLP's tanh-GELU dominate a
//! float32 forward pass. These kernels do that arithmetic on the host instead — the CPU
//! backend shares memory with the host — with a vectorised exponential (AVX2 + FMA when the
//! CPU has them, a portable loop otherwise), register-tiled AVX2 + FMA products for attention
//! and the linked BLAS for the other matrix products. They are not bit-identical to MLX's
//! kernels (the exact path never uses them); they are accurate to a few float32 ulps.

mod attention;
mod attention_tiles;
mod exp;
mod gelu;
mod parallel;
mod rms_norm;
mod sgemm;
mod softmax;

pub use attention::{AttentionMask, AttentionShape, attention};
pub use exp::exp_in_place;
pub use gelu::gelu_tanh_mul;
pub use parallel::for_row_chunks;
pub use rms_norm::{rms_norm_row, rms_norm_rows};
pub use sgemm::{Matrix, MatrixMut, sgemm};
pub use softmax::softmax_rows;
