//! CPU kernels that compute what MLX 0.32's CPU backend computes, bit for bit, over plain
//! slices: no MLX, no FFI. Each kernel names the MLX primitive (or the mlx-vlm op sequence)
//! whose bits it reproduces, for the dtypes it takes ([`Float`]: `f32` and `bf16`).
//!
//! MLX's CPU kernels on x86 run with a SIMD width of 1: every reduction (a matmul's k-sum, a
//! softmax's normaliser, a norm's sum of squares) runs sequentially in index order, each
//! product rounded before it is added (on aarch64 the stock wheel fuses the two:
//! [`gemm::TargetMultiplyAdd`]). A kernel here keeps each output's own order of operations and
//! vectorises across outputs or rows, never along one reduction; that is what lets it be
//! exact and fast at once. Every kernel runs over all cores (rayon), with AVX2 + FMA on x86-64
//! where the CPU has it (the matrix products' tiles, the softmax and `exp` also in AVX-512
//! where the CPU has that), NEON on aarch64, and a portable loop otherwise; all give the same
//! bits on one target. The instruction set is decided once per process ([`cpu::isa`], which
//! the environment can lower) and passed down from each kernel's entry.
//!
//! The crate by concern: the matrix products ([`gemm`], [`quantized`]) and attention
//! ([`attention`]); the kernels over rows ([`rms_norm`], [`vision_rms_norm`], [`layer_norm`],
//! [`rope`]); the element-wise ones ([`elementwise`], [`exp`], [`tanh`], [`power`], [`gelu`]);
//! the exactness floor's rates ([`peak`]); the instruction sets ([`cpu`], and `simd`: the one
//! vocabulary of float32 lanes that AVX2, AVX-512 and NEON each implement, over which the
//! vector code is written once and stamped per instruction set).
//!
//! This is the only crate with SIMD `unsafe`; every `unsafe` block states why it is sound. The
//! `#[target_feature]` code is reached through safe entries that take a proof token of the
//! instruction set ([`cpu`]), so what `unsafe` remains is memory: the micro-kernels' pointers,
//! the vector loads and stores.
//!
//! # Example
//!
//! mlx-vlm's `gelu_approx` over a row (its ops run one by one), then MLX's `fast.rms_norm` of
//! it (no weight), in float32:
//!
//! ```
//! use gemma_vision_kernels::gelu::{CubicTerm, gelu_approx};
//! use gemma_vision_kernels::rms_norm::rms_norm;
//!
//! let x = [-2.0f32, -0.5, 0.0, 0.5, 2.0, 3.0];
//! let mut gelu = [0.0f32; 6];
//! gelu_approx(CubicTerm::Separate, &x, &mut gelu)?;
//! assert_eq!(gelu[2], 0.0);
//! assert!(gelu[0] < 0.0 && gelu[4] > 1.9);
//!
//! let mut normed = [0.0f32; 6];
//! rms_norm::<f32, f32>(&gelu, None, 1e-6, 6, &mut normed)?;
//! let mean_square = normed.iter().map(|v| v * v).sum::<f32>() / 6.0;
//! assert!((mean_square - 1.0).abs() < 1e-4);
//! # Ok::<(), gemma_vision_kernels::Error>(())
//! ```
#![allow(unsafe_code, reason = "SIMD intrinsics (std::arch) behind run-time CPU feature checks")]
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod attention;
mod element;
mod error;
pub mod gemm;
mod math;
pub mod parallel;
pub mod peak;
pub mod quantized;
mod rows;
mod simd;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;

pub use element::{ElementType, Float, bf16_from_f32};
pub use error::{Error, Result};
pub use math::{elementwise, exp, gelu, power, tanh};
pub use rows::{layer_norm, rms_norm, rope, vision_rms_norm};
pub use simd::cpu;
