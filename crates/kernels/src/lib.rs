//! CPU kernels that compute what MLX 0.32's CPU backend computes, bit for bit, over plain
//! slices: no MLX, no FFI. Each kernel names the MLX primitive (or the mlx-vlm op sequence)
//! whose bits it reproduces, for the dtypes it takes ([`Float`]: `f32` and `bf16`).
//!
//! MLX's CPU kernels on x86 run with a SIMD width of 1: every reduction (a matmul's k-sum, a
//! softmax's normaliser, a norm's sum of squares) runs sequentially in index order, each
//! product rounded before it is added. A kernel here keeps each output's own order of
//! operations and vectorises across outputs or rows, never along one reduction; that is
//! what lets it be exact and fast at once. Every kernel runs over all cores (rayon), with
//! AVX2 + FMA where the CPU has it (the matrix products' tiles and the softmax also in AVX-512
//! where the CPU has that) and a portable loop otherwise; all give the same bits. The
//! instruction set is decided once per process ([`cpu::isa`], which the environment can
//! lower) and passed down from each kernel's entry.
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
pub mod cpu;
mod element;
pub mod elementwise;
mod error;
pub mod exp;
pub mod gelu;
pub mod gemm;
#[cfg(target_arch = "x86_64")]
mod lanes;
#[cfg(target_arch = "aarch64")]
mod lanes_neon;
pub mod layer_norm;
pub mod parallel;
pub mod power;
pub mod quantized;
pub mod rms_norm;
pub mod rope;
mod rows;
mod scratch;
pub mod tanh;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
pub mod vision_rms_norm;

pub use element::{ElementType, Float, bf16_from_f32};
pub use error::{Error, Result};
