//! The building blocks of the Gemma 4 vision encoders, on [`tensor`].
//!
//! Every block mirrors one piece of mlx-vlm 0.7.10 (`models/gemma4/vision.py`, `models/base.py`,
//! `mlx.nn`) op for op: the same MLX primitives, in the same order, with the same dtypes and
//! weak scalars, so that on the same libmlx the outputs are identical bit for bit. Each block's
//! documentation names the reference function it mirrors and spells out that op order.
//!
//! A block is a plain struct with a pure constructor from its weights (`new`), a loader reading
//! them from a prefix-scoped [`Weights`] view (`load`), and `forward(&self, …) -> Result<Array>`.
//! Inference is immutable; nothing is cached behind `&self`. Layers know nothing of checkpoints
//! or model types: key names below a block's prefix are mlx-vlm's, the prefix is the caller's.
//!
//! | block | reference |
//! |---|---|
//! | [`Linear`] | `mlx.nn.Linear` |
//! | [`QuantizedLinear`] | `mlx.nn.QuantizedLinear` |
//! | [`OneBitLinear`] | `mlx_vlm.quantization.one_bit.OneBitLinear` |
//! | [`Projection`] | either, as the checkpoint stores the map |
//! | [`ClippableLinear`] | `gemma4.vision.ClippableLinear` |
//! | [`RmsNorm`] | `gemma4.vision.RMSNorm`, `gemma4.language.RMSNormNoScale` |
//! | [`VisionRmsNorm`] | `gemma4.vision.VisionRMSNorm`, `VisionRMSNormNoScale` |
//! | [`LayerNorm`] | `mlx.nn.LayerNorm` |
//! | [`GegluMlp`] | `gemma4.vision.VisionMLP` |
//! | [`VisionAttention`] | `gemma4.vision.VisionAttention` |
//! | [`VisionBlock`] | `gemma4.vision.VisionTransformerBlock` |
//!
//! Beneath the blocks, the op layer ([`ops`]) holds what the blocks compute with and imports
//! nothing from them: [`ClipBounds`], [`RopeTables`] (`gemma4.vision.apply_multidimensional_rope`),
//! [`gelu_approx`] (`mlx.nn.gelu_approx`), [`ensure_fused_sdpa`] (`models.base.ensure_fused_sdpa`)
//! and the ops themselves.
//!
//! Weights come from a [`WeightStore`] (a safetensors checkpoint, a [`MemoryStore`], or the
//! caller's own renaming view) through [`Weights`], which checks every tensor's presence, shape
//! and dtype, names the full key in its errors, optionally converts to a compute dtype once at
//! load, and records what was used so that unused checkpoint tensors can be refused.
//!
//! Who computes the blocks is chosen once, at load: it rides on [`Weights`] beside the compute
//! dtype ([`Weights::with_execution`]). Blocks compute with MLX's ops by default
//! ([`Execution::Mlx`], any backend). On MLX's CPU backend, [`Execution::Host`] runs the same
//! functions as the `kernels` crate's host kernels, which reproduce MLX's CPU bits over every
//! core (float32 and bf16; other dtypes stay on MLX), on the MLX builds [`HostParity`] names as
//! proven. Blocks write mlx-vlm's op sequence once,
//! in terms of the op layer ([`ops`]), the one place where MLX's ops and the host kernels are
//! chosen between; [`take_kernels_run`] says which kernels ran ([`HostKernel`]).
//!
//! # Example
//!
//! A [`Linear`] from its weights (`mlx.nn.Linear`: `x @ weight.T + bias`), on MLX's ops; the
//! arrays come from the `gemma-vision-tensor` crate, under its short name `tensor`:
//!
//! ```
//! use gemma_vision_layers::{Execution, Linear};
//! use tensor::{Array, SharedArray};
//!
//! let weight = SharedArray::new(Array::from_slice(&[1.0f32, 0.0, 0.0, 2.0, 1.0, 1.0], &[3, 2])?)?;
//! let bias = SharedArray::new(Array::from_slice(&[0.5f32, 0.0, -1.0], &[3])?)?;
//! let linear = Linear::new(weight, Some(bias), Execution::Mlx);
//! let y = linear.forward(&Array::from_slice(&[3.0f32, 4.0], &[1, 2])?)?;
//! assert_eq!(y.to_vec::<f32>()?, [3.5, 8.0, 6.0]);
//! # Ok::<(), gemma_vision_layers::Error>(())
//! ```
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod clippable_linear;
mod error;
mod execution;
mod geglu_mlp;
mod host_parity;
mod layer_norm;
mod linear;
mod memory_store;
mod one_bit_linear;
pub mod ops;
mod projection;
mod quantization;
mod quantized_linear;
mod rms_norm;
mod vision_attention;
mod vision_block;
mod vision_block_config;
mod vision_rms_norm;
mod weight_store;
mod weights;

pub use clippable_linear::ClippableLinear;
pub use error::{Error, Result};
pub use execution::Execution;
pub use geglu_mlp::GegluMlp;
pub use host_parity::{HostParity, PROVEN_MLX, ProvenMlx, gelu_cubic_term, mlx_cpu_jit};
pub use layer_norm::{LAYER_NORM_EPS, LayerNorm};
pub use linear::Linear;
pub use memory_store::MemoryStore;
pub use one_bit_linear::OneBitLinear;
pub use ops::{
    ClipBounds, FUSED_HEAD_DIMS, HostKernel, RopeTables, VISION_RMS_NORM_EPS, ensure_fused_sdpa, gelu_approx,
    rotate_half, take_kernels_run,
};
pub use projection::Projection;
pub use quantization::{Quantization, QuantizationMode, QuantizationPlan};
pub use quantized_linear::QuantizedLinear;
pub use rms_norm::RmsNorm;
pub use vision_attention::{AttentionWeights, VisionAttention};
pub use vision_block::{BlockNorms, VisionBlock};
pub use vision_block_config::VisionBlockConfig;
pub use vision_rms_norm::VisionRmsNorm;
pub use weight_store::WeightStore;
pub use weights::Weights;
