//! One module per model family: everything that differs between gemma4 and gemma4_unified,
//! asked by everyone else ([`VisionEncoder`](crate::VisionEncoder), the checkpoint, the
//! inspection, and the `embed` and Python crates).
//!
//! - [`Family`]: a family's rules: its key prefixes and sanitize rules, its quantizable
//!   linears, where its processors read their settings, its vision config, how it prepares an
//!   image and a video frame, its batch key and the soft tokens of an image size.
//! - [`FamilyModel`]: a loaded family's encoder, and how it encodes a batch of prepared images
//!   or mlx-vlm's model inputs (written once per family).
//!
//! [`ModelType::family`] is the one place a model type picks its family.

mod gemma4;
mod gemma4_unified;
mod model_type;

pub use gemma4::Gemma4;
pub use gemma4_unified::Gemma4Unified;
pub use model_type::{ModelType, UnknownModelType};

use crate::siglip_tower::SiglipVisionTower;
use crate::trace::Trace;
use crate::unified_embedder::UnifiedVisionEmbedder;
use crate::{BatchKey, ModelConfig, ModelInputs, PreparedImage, Result, VisionConfig};
use layers::Weights;
use preprocess::{Preprocessor, RgbImage, SettingsLayout, VideoPreprocessor};
use std::fmt;
use tensor::Array;

/// The rules of one model family (mlx-vlm's `models/gemma4` or `models/gemma4_unified`).
pub trait Family: fmt::Debug + Send + Sync {
    /// The `model_type` of the family's checkpoints.
    fn model_type(&self) -> ModelType;

    /// Key prefixes (after sanitizing) of the tensors the vision side reads.
    fn vision_prefixes(&self) -> &'static [&'static str];

    /// Whether the family's `Model.sanitize` drops the tensor `key` (raw, as stored) beyond the
    /// rules every family shares (rotary tables dropped, a leading `model.` stripped: see
    /// [`SanitizedStore`](crate::SanitizedStore)); `use_clipped_linears` is the vision config's.
    fn drops_tensor(&self, key: &str, use_clipped_linears: bool) -> bool;

    /// Whether mlx-vlm 0.7.10 can run the vision module `module` (a sanitized path) quantized.
    fn runs_quantized(&self, module: &str) -> bool;

    /// The vision linear mlx-vlm stores but cannot run quantized, if the family has one.
    fn unquantizable_linear(&self) -> Option<&'static str>;

    /// Where the family's processors read their settings in a processor config file.
    fn settings_layout(&self) -> SettingsLayout;

    /// The family's vision config from `config.json`'s `vision_config` object (null fields
    /// already removed), with the reference's defaults; not yet validated.
    fn vision_config(&self, json: &serde_json::Value) -> std::result::Result<VisionConfig, serde_json::Error>;

    /// `text_config.hidden_size` when `config.json` does not give it.
    fn default_text_hidden_size(&self) -> i32;

    /// One decoded image prepared as the family's image processor prepares it.
    fn prepare_image(&self, image: &RgbImage, preprocessor: &Preprocessor) -> Result<PreparedImage>;

    /// One kept video frame prepared as the family's video processor prepares it.
    fn prepare_frame(&self, frame: &RgbImage, video: &VideoPreprocessor) -> Result<PreparedImage>;

    /// Prepared images of one key can be encoded as one batch.
    fn batch_key(&self, image: &PreparedImage) -> BatchKey;

    /// The soft tokens of an image resized to `height × width` by `preprocessor`.
    fn soft_tokens(&self, height: u32, width: u32, preprocessor: &Preprocessor) -> u64;

    /// Whether mlx-vlm's features for model inputs have a leading batch axis of 1 (gemma4's
    /// `encode_image` returns `[1, Σ, D]`; gemma4_unified's `get_image_features` `[Σ, D]`).
    fn model_features_have_batch_axis(&self) -> bool;

    /// Whether the family's mlx-vlm model takes a list of pixel inputs (gemma4: images of
    /// different sizes, videos of different lengths) besides one array.
    fn takes_input_lists(&self) -> bool;
}

impl ModelType {
    /// The family of this model type.
    pub fn family(self) -> &'static dyn Family {
        match self {
            ModelType::Gemma4 => &Gemma4,
            ModelType::Gemma4Unified => &Gemma4Unified,
        }
    }
}

/// A loaded family's encoder. Both methods return `[Σ rows, text_hidden]` features (before any
/// embed-scale division) and the rows of each image or frame, in input order.
pub(crate) trait FamilyModel: fmt::Debug + Send + Sync {
    /// Encodes prepared images, batched by the family's [`Family::batch_key`]; `trace` records
    /// each batch's stages.
    fn encode(&self, images: &[PreparedImage], trace: Option<&mut Trace>) -> Result<(Array, Vec<usize>)>;

    /// Encodes mlx-vlm's pixel inputs as its model does (see
    /// [`MlxVlmModel::encode_model_inputs`](crate::MlxVlmModel::encode_model_inputs)).
    fn encode_model_inputs(&self, inputs: &ModelInputs) -> Result<(Array, Vec<usize>)>;

    /// Refuses a budget (of the checked `preprocessor`) whose inputs the encoder could not
    /// attend over in memory.
    fn check_attention_budget(&self, preprocessor: &Preprocessor) -> Result<()>;

    /// The smallest input of the model's own configuration (one soft token of zeros).
    fn smallest_input(&self) -> Result<PreparedImage>;
}

/// Loads the encoder `config`'s family runs, from `weights`.
pub(crate) fn load_model(config: &ModelConfig, weights: &Weights) -> Result<Box<dyn FamilyModel>> {
    Ok(match &config.vision {
        VisionConfig::Siglip(c) => Box::new(SiglipVisionTower::load(weights, c, config.text_hidden_size)?),
        VisionConfig::Unified(c) => Box::new(UnifiedVisionEmbedder::load(weights, c, config.text_hidden_size)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_model_type_has_its_own_family() {
        for model_type in ModelType::ALL {
            assert_eq!(model_type.family().model_type(), model_type);
        }
        let layout = |m: ModelType| m.family().settings_layout();
        assert!(layout(ModelType::Gemma4).flat_image_settings);
        assert!(
            !layout(ModelType::Gemma4).num_soft_tokens_alias
                && !layout(ModelType::Gemma4).video_inherits_image_settings
        );
        assert!(!layout(ModelType::Gemma4Unified).flat_image_settings);
        assert!(layout(ModelType::Gemma4Unified).num_soft_tokens_alias);
        assert!(layout(ModelType::Gemma4Unified).video_inherits_image_settings);
    }
}
