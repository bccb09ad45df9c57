//! gemma4_unified (the 12B encoder-free model): mlx-vlm's `models/gemma4_unified`, a patch
//! embedder without a transformer ([`UnifiedVisionEmbedder`]) and its image and video
//! processors (`processing_gemma4_unified.py`).

use super::{Family, FamilyModel, ModelType};
use crate::prepared_image::stack_patches;
use crate::trace::Trace;
use crate::unified_embedder::UnifiedVisionEmbedder;
use crate::{BatchKey, Error, ModelInputs, PreparedImage, Result, UnifiedConfig, VisionConfig};
use preprocess::{Preprocessor, RgbImage, SettingsLayout, VideoPreprocessor};
use serde::Deserialize;
use tensor::Array;

/// The gemma4_unified family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gemma4Unified;

impl Family for Gemma4Unified {
    fn model_type(&self) -> ModelType {
        ModelType::Gemma4Unified
    }

    fn vision_prefixes(&self) -> &'static [&'static str] {
        &["vision_embedder.", "embed_vision."]
    }

    /// gemma4_unified's `Model.sanitize` drops nothing beyond the shared rules.
    fn drops_tensor(&self, _key: &str, _use_clipped_linears: bool) -> bool {
        false
    }

    /// The projector and the embedder's `patch_dense`.
    fn runs_quantized(&self, module: &str) -> bool {
        module == "embed_vision.embedding_projection" || module == "vision_embedder.patch_dense"
    }

    fn unquantizable_linear(&self) -> Option<&'static str> {
        None
    }

    fn settings_layout(&self) -> SettingsLayout {
        SettingsLayout { flat_image_settings: false, num_soft_tokens_alias: true, video_inherits_image_settings: true }
    }

    fn vision_config(&self, json: &serde_json::Value) -> std::result::Result<VisionConfig, serde_json::Error> {
        UnifiedConfig::deserialize(json).map(VisionConfig::Unified)
    }

    fn default_text_hidden_size(&self) -> i32 {
        3840
    }

    /// `Gemma4UnifiedImageProcessor.preprocess`: resized, rescaled, 48×48 model patches padded
    /// to `max_soft_tokens` rows, with positions.
    fn prepare_image(&self, image: &RgbImage, preprocessor: &Preprocessor) -> Result<PreparedImage> {
        Ok(PreparedImage::Patches(preprocessor.gemma4_unified_image(image)?.patches))
    }

    /// `Gemma4UnifiedVideoProcessor`: model patches padded to `max_soft_tokens` rows.
    fn prepare_frame(&self, frame: &RgbImage, video: &VideoPreprocessor) -> Result<PreparedImage> {
        Ok(PreparedImage::Patches(video.gemma4_unified_frame(frame)?))
    }

    fn batch_key(&self, image: &PreparedImage) -> BatchKey {
        image.shape_key()
    }

    /// `(H // (patch · pool)) · (W // (patch · pool))`: one soft token per model patch.
    fn soft_tokens(&self, height: u32, width: u32, preprocessor: &Preprocessor) -> u64 {
        let (p, k) = (u64::from(preprocessor.patch_size().get()), u64::from(preprocessor.pooling_kernel_size().get()));
        (u64::from(height) / (p * k)) * (u64::from(width) / (p * k))
    }

    fn model_features_have_batch_axis(&self) -> bool {
        false
    }

    fn takes_input_lists(&self) -> bool {
        false
    }
}

impl FamilyModel for UnifiedVisionEmbedder {
    /// Every input in one batch (`get_image_features` on the stacked patches): each image's
    /// soft tokens are its real rows.
    fn encode(&self, images: &[PreparedImage], trace: Option<&mut Trace>) -> Result<(Array, Vec<usize>)> {
        let all: Vec<usize> = (0..images.len()).collect();
        let (patches, positions) = stack_patches(images, &all)?;
        let soft_tokens = images
            .iter()
            .map(|image| match image {
                PreparedImage::Patches(p) => p.real,
                PreparedImage::Pixels(p) => p.soft_tokens,
            })
            .collect();
        Ok((self.encode_patches(&patches, Some(&positions), trace)?, soft_tokens))
    }

    /// `Model.get_image_features` (or `get_video_features` for `[V, T, N, D]` frames); without
    /// ids every row is kept.
    fn encode_model_inputs(&self, inputs: &ModelInputs) -> Result<(Array, Vec<usize>)> {
        let ModelInputs::Patches { patches, positions } = inputs else {
            return Err(Error::ModelInput {
                input: "pixel_values",
                expected: "gemma4_unified model patches [B, N, D] (or video frames [V, T, N, D])".to_owned(),
                found: "gemma4 pixels or a list".into(),
            });
        };
        let soft_tokens = match positions {
            Some(positions) => self.kept_rows(positions)?,
            None => {
                let shape = patches.shape();
                let frames = shape[..shape.len() - 2].iter().product::<i32>();
                vec![shape[shape.len() - 2] as usize; frames as usize]
            }
        };
        Ok((self.encode_patches(patches, positions.as_ref(), None)?, soft_tokens))
    }

    /// No attention: the inputs are bounded by the preprocessor's pixel bound.
    fn check_attention_budget(&self, _preprocessor: &Preprocessor) -> Result<()> {
        Ok(())
    }

    /// One model patch of zeros at `(0, 0)`.
    fn smallest_input(&self) -> Result<PreparedImage> {
        let c = self.config();
        let dim = usize::try_from(c.patch_dim()).map_err(|_| Error::input("the patch size does not fit in memory"))?;
        let side = usize::try_from(c.model_patch_size).unwrap_or(0);
        Ok(PreparedImage::Patches(preprocess::Patches {
            data: vec![0.0; dim],
            positions: vec![0, 0],
            len: 1,
            dim,
            patch: side,
            grid: (1, 1),
            real: 1,
        }))
    }
}
