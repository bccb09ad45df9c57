//! The Gemma 4 vision encoders on MLX, bit-exact with mlx-vlm 0.7.10.
//!
//! - [`SiglipVisionTower`]: gemma4 (e2b, e4b, 26B-A4B, 31B): patch embedding, a transformer
//!   with 2-D RoPE, position pooling, optional standardization, the multimodal embedder.
//! - [`UnifiedVisionEmbedder`]: gemma4_unified (12B): layer norms, a dense projection and a
//!   factorised position embedding per 48×48 patch, the multimodal embedder.
//! - [`VisionEncoder`]: either, loaded from a model directory as published ([`Checkpoint`]) or
//!   from a Hugging Face Hub repository by name ([`ModelSource`]: `"org/name@revision"`, found
//!   in the Hugging Face cache or fetched, only its vision bytes, by the `hub` crate), with the
//!   image processor: image files or decoded images in, [`Features`] out —
//!   `[Σ soft tokens, text_hidden]`, identical bit for bit to mlx-vlm's `Model.encode_image`
//!   (gemma4) / `Model.get_image_features` (gemma4_unified) on the same libmlx.
//! - [`Family`] ([`Gemma4`], [`Gemma4Unified`], chosen by [`ModelType::family`]): everything that
//!   differs between the two families (key prefixes and sanitize rules, quantizable linears,
//!   how an image or a frame is prepared, the batch key, soft tokens per image size), asked by
//!   the encoder, the checkpoint, the inspection and the crates above.
//! - Checkpoints as published, quantized ones included: the vision modules mlx-vlm runs as
//!   `nn.QuantizedLinear` are [`layers::QuantizedLinear`]s here ([`QuantizationConfig`]).
//! - [`Inspection`]: what a loaded encoder is and why an image gives the tokens it gives.
//! - Inside mlx-vlm: [`ModelInputs`] (the pixel inputs its processors make, images and video
//!   frames) encoded as its models encode them, and [`HeldTensor`]: the check that the weights
//!   of its loaded model are the checkpoint's.
//!
//! Composition only: blocks come from `layers`, preprocessing from `preprocess`; this crate
//! knows checkpoints and model families, not FFI.
//!
//! # Example
//!
//! One image file encoded by a checkpoint's encoder (here the crate's tiny test checkpoint; a
//! published model directory, or a Hub name such as `"mlx-community/gemma-4-e2b-it-bf16"`,
//! works the same way):
//!
//! ```
//! use gemma_vision_encoder::{EncoderOptions, VisionEncoder};
//!
//! # let model = "tests/fixtures/tiny-clipped/model";
//! # let image = "tests/fixtures/tiny-clipped/images/noise-20x30.png";
//! let encoder = VisionEncoder::load(model, EncoderOptions::default())?;
//! let features = encoder.encode_files(&[image], None)?;
//! // [Σ soft tokens, text_hidden]: one row per soft token of the image.
//! let shape = features.features.shape();
//! assert_eq!(shape.len(), 2);
//! assert_eq!(shape[0] as usize, features.soft_tokens.iter().sum::<usize>());
//! # Ok::<(), gemma_vision_encoder::Error>(())
//! ```
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod cache_identity;
mod checkpoint;
mod compute_dtype;
mod config;
mod encoder;
mod error;
mod family;
mod held_weights;
mod inspection;
mod kernels;
mod mlx_vlm_model;
mod model_inputs;
mod model_source;
mod multimodal_embedder;
mod patch_embedder;
mod patch_rows;
mod pooler;
mod prepared_image;
mod quantization;
mod sanitized_store;
mod siglip_tower;
mod trace;
mod unified_embedder;

pub use cache_identity::CacheIdentity;
pub use checkpoint::{Checkpoint, INDEX_FILE};
pub use compute_dtype::{ComputeDtype, UnknownComputeDtype};
pub use config::{ModelConfig, RopeParameters, SiglipConfig, UnifiedConfig, VisionConfig};
pub use encoder::{EncoderOptions, Features, VisionEncoder};
pub use error::{Error, ErrorKind, Result};
pub use family::{Family, Gemma4, Gemma4Unified, ModelType, UnknownModelType};
pub use held_weights::HeldTensor;
pub use hub::{HubEnvironment, ModelSource, Origin};
pub use inspection::{
    Budget, IgnoredTensors, ImagePlan, Inspection, MlxLibrary, ModelOrigin, QuantizedModule, TensorCounts,
};
pub use kernels::{Kernels, UnknownKernels};
pub use mlx_vlm_model::MlxVlmModel;
pub use model_inputs::ModelInputs;
pub use model_source::encoder_selection;
pub use multimodal_embedder::MultimodalEmbedder;
pub use patch_embedder::PatchEmbedder;
pub use pooler::Pooler;
pub use prepared_image::{BatchKey, PreparedImage};
pub use preprocess::{BudgetError, BudgetSource, SettingsLayout, SoftTokenBudget};
pub use quantization::{ModuleQuantization, QuantizationConfig};
pub use sanitized_store::SanitizedStore;
pub use siglip_tower::{PooledRows, SiglipVisionTower};
pub use trace::Trace;
pub use unified_embedder::UnifiedVisionEmbedder;
