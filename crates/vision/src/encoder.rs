//! [`VisionEncoder`]: a checkpoint (a directory, or a Hub repository by name) in,
//! language-space soft tokens out.

use crate::family::{Family, FamilyModel, load_model};
use crate::kernels::execution;
use crate::trace::Trace;
use crate::{Checkpoint, ComputeDtype, Error, Kernels, ModelConfig, PreparedImage, Result};
use hub::{HubEnvironment, ModelSource};
use layers::{WeightStore, Weights};
use preprocess::{
    Preprocessor, ProcessorConfig, RgbImage, SettingsFile, SoftTokenBudget, VideoPreprocessor, VideoProcessorConfig,
};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tensor::Array;

/// How an encoder is loaded and what its output means.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EncoderOptions {
    pub compute_dtype: ComputeDtype,
    /// Who runs the ops (the bits are the same).
    pub kernels: Kernels,
    /// Divide the features by the language model's `embed_scale` (`√text_hidden`), for a
    /// language model that multiplies every input embedding by it. mlx-vlm does not (its
    /// features replace image-token rows after the scaling), so the default is `false`.
    pub divide_by_embed_scale: bool,
    /// Decoder limits for images read by the encoder.
    pub limits: preprocess::Limits,
    /// Where a model named by Hub repository is looked for and fetched from (endpoint,
    /// caches, token, offline mode); `None` reads this process's variables
    /// ([`HubEnvironment::from_env`]: `HF_ENDPOINT`, `HF_HOME`, `HF_TOKEN`, `HF_HUB_OFFLINE`, ...).
    pub hub: Option<HubEnvironment>,
}

/// Soft tokens of one call.
#[derive(Debug)]
pub struct Features {
    /// `[Σ soft_tokens, text_hidden]`: the images' soft tokens in input order, exactly what
    /// mlx-vlm's `Model.encode_image` (gemma4) or `Model.get_image_features` (gemma4_unified)
    /// returns, without its leading batch axis, in the dtype it returns (the checkpoint's dtype
    /// for gemma4; float32 for gemma4_unified, whose float32 patches promote every step).
    pub features: Array,
    /// Soft tokens per image, in input order (they sum to `features`' first extent).
    pub soft_tokens: Vec<usize>,
}

/// A loaded Gemma 4 vision encoder of either family, with its image processor settings: the
/// family's rules ([`Family`]) and its loaded encoder decide everything that differs between
/// the families.
///
/// `Send + Sync`: the weights are settled arrays ([`tensor::SharedArray`]), which MLX only
/// reads, so one encoder may serve many threads (each thread builds and runs its own graphs on
/// its own MLX stream; what a call returns stays on the caller's thread).
#[derive(Debug)]
pub struct VisionEncoder {
    config: ModelConfig,
    /// The checkpoint's image processor, its settings checked at load.
    preprocessor: Preprocessor,
    /// The checkpoint's video settings, read at load; checked by [`VideoPreprocessor::new`]
    /// for the budget a call asks for.
    video: VideoProcessorConfig,
    options: EncoderOptions,
    family: &'static dyn Family,
    model: Box<dyn FamilyModel>,
    checkpoint: Checkpoint,
    used_keys: Vec<String>,
    pub(crate) identity: Mutex<Option<String>>,
}

impl VisionEncoder {
    /// Loads the encoder of `model`: a model directory (a `Path`), or text as a user types it
    /// (`"org/name"`, `"org/name@revision"`, or a path; see [`ModelSource::parse`]). A Hub
    /// repository is found on this machine or fetched, only its vision bytes
    /// ([`Checkpoint::resolve`], with [`EncoderOptions::hub`]). Validates the config, reads only
    /// the vision tensors (checking each one's shape and dtype; quantized modules as the
    /// checkpoint's quantization says), and fails if the checkpoint holds vision tensors no
    /// block uses. A weight error names the file it looked in ([`Error::Weight`]).
    pub fn load(model: impl Into<ModelSource>, options: EncoderOptions) -> Result<VisionEncoder> {
        let checkpoint = Checkpoint::resolve(&model.into(), options.hub.as_ref())?;
        VisionEncoder::from_checkpoint(checkpoint, options)
    }

    /// Loads the encoder of an opened [`Checkpoint`] (see [`VisionEncoder::load`]).
    pub fn from_checkpoint(checkpoint: Checkpoint, options: EncoderOptions) -> Result<VisionEncoder> {
        let config = checkpoint.config().clone();
        let family = config.model_type.family();
        let layout = family.settings_layout();
        let settings = SettingsFile::find(checkpoint.dir())?;
        let preprocessor = Preprocessor::from_settings_file(settings.as_ref(), layout)?;
        let video = VideoProcessorConfig::from_settings_file(settings.as_ref(), layout)?;
        let store = checkpoint.store();
        let compute = options.compute_dtype.weight_dtype();
        let weights = Weights::new(store as Arc<dyn WeightStore>)
            .with_compute_dtype(compute)
            .with_execution(execution(options.kernels)?.0)
            .with_quantization(checkpoint.quantization());
        let model = load_model(&config, &weights).map_err(|e| checkpoint.locate(e))?;
        weights.ensure_all_used()?;
        let used_keys = weights.used_keys();
        let identity = Mutex::new(None);
        Ok(VisionEncoder { config, preprocessor, video, options, family, model, checkpoint, used_keys, identity })
    }

    /// The rules of the encoder's model family.
    pub fn family(&self) -> &'static dyn Family {
        self.family
    }

    /// The family's loaded encoder.
    pub(crate) fn model(&self) -> &dyn FamilyModel {
        self.model.as_ref()
    }

    /// The checkpoint the encoder was loaded from.
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The sanitized names of the vision tensors the encoder read, sorted.
    pub fn used_keys(&self) -> &[String] {
        &self.used_keys
    }

    /// The validated model configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The image processor settings from the checkpoint (`processor_config.json`, else
    /// `preprocessor_config.json`, else the reference's defaults).
    pub fn processor_config(&self) -> &ProcessorConfig {
        self.preprocessor.config()
    }

    /// The options the encoder was loaded with.
    pub fn options(&self) -> &EncoderOptions {
        &self.options
    }

    /// The image processor for a soft-token budget (`budget`, else the checkpoint's, else 280):
    /// the checkpoint's settings (checked at load) with the budget's bounds checked for this
    /// encoder, the resized images' pixels ([`Preprocessor::with_budget`]) and, for gemma4, the
    /// attention over an image of `max_soft_tokens · pool²` patches ([`Error::TooLarge`]),
    /// before any image is read or resized. Callers of [`encode`](Self::encode) make it once
    /// and [`prepare`](Self::prepare) every image with it.
    pub fn preprocessor(&self, budget: Option<SoftTokenBudget>) -> Result<Preprocessor> {
        let preprocessor = self.preprocessor.with_budget(budget)?;
        self.model.check_attention_budget(&preprocessor)?;
        Ok(preprocessor)
    }

    /// The video processor for a soft-token budget per frame: `budget` (one of
    /// [`preprocess::VIDEO_BUDGETS`]), else the checkpoint's (the `video_processor` settings of
    /// `processor_config.json` or `preprocessor_config.json`, read as mlx-vlm reads them for
    /// this family), else 70; checked for this encoder as [`preprocessor`](Self::preprocessor)
    /// checks an image's.
    pub fn video_preprocessor(&self, budget: Option<SoftTokenBudget>) -> Result<VideoPreprocessor> {
        let video = VideoPreprocessor::new(self.video.clone().with_max_soft_tokens(budget))?;
        self.model.check_attention_budget(video.frame_preprocessor())?;
        Ok(video)
    }

    /// Prepares a decoded image for this encoder (resize, rescale, layout) with `preprocessor`
    /// (made by [`preprocessor`](Self::preprocessor)), as the family's image processor does.
    pub fn prepare(&self, image: &RgbImage, preprocessor: &Preprocessor) -> Result<PreparedImage> {
        self.family.prepare_image(image, preprocessor)
    }

    /// Prepares the frames of one video (decoded, all of one size) with `video` (made by
    /// [`video_preprocessor`](Self::video_preprocessor)) as mlx-vlm's video processor for this
    /// family does: the frames it keeps (at most `num_frames`, sampled uniformly), in order,
    /// each resized to the budget's video size, rescaled and cut into patches padded to the
    /// budget (gemma4: `patch_size` patches, its tower's position-id path; gemma4_unified:
    /// model patches). Encoded, the features of each kept frame, in order, are what mlx-vlm
    /// computes for the video: gemma4's video path
    /// (`embed_vision(vision_tower(pixel_values_videos, video_position_ids))`), gemma4_unified's
    /// `get_video_features`; `soft_tokens` counts each kept frame's rows.
    pub fn prepare_video(&self, frames: &[RgbImage], video: &VideoPreprocessor) -> Result<Vec<PreparedImage>> {
        video.sample(frames)?.into_iter().map(|frame| self.family.prepare_frame(frame, video)).collect()
    }

    /// Decodes, prepares and encodes image files (EXIF orientation applied, as mlx-vlm's
    /// `load_image` does) with the soft-token budget `budget` (else the checkpoint's, else 280),
    /// checked ([`preprocessor`](Self::preprocessor)) before any file is read.
    pub fn encode_files(&self, paths: &[impl AsRef<Path>], budget: Option<SoftTokenBudget>) -> Result<Features> {
        let preprocessor = self.preprocessor(budget)?;
        let images = paths
            .iter()
            .map(|p| preprocess::open(p.as_ref(), &self.options.limits))
            .collect::<preprocess::Result<Vec<_>>>()?;
        let prepared = images.iter().map(|image| self.prepare(image, &preprocessor)).collect::<Result<Vec<_>>>()?;
        self.encode(&prepared)
    }

    /// Encodes prepared images as the family's encoder batches them (gemma4: pixel inputs of
    /// one size as one batch, images of different sizes in separate batches, padded patch
    /// inputs of one length likewise; gemma4_unified: all in one batch); the soft tokens are
    /// returned in input order.
    pub fn encode(&self, images: &[PreparedImage]) -> Result<Features> {
        self.encode_recording(images, None)
    }

    /// [`encode`](Self::encode), each batch's stages recorded in `trace` when there is one.
    pub(crate) fn encode_recording(&self, images: &[PreparedImage], trace: Option<&mut Trace>) -> Result<Features> {
        if images.is_empty() {
            return Err(Error::input("no images to encode"));
        }
        let (features, soft_tokens) = self.model.encode(images, trace)?;
        Ok(Features { features: self.scaled_features(features)?, soft_tokens })
    }

    /// `features` divided by `√text_hidden` when the options ask for it.
    pub(crate) fn scaled_features(&self, features: Array) -> Result<Array> {
        if !self.options.divide_by_embed_scale {
            return Ok(features);
        }
        Ok(features.div(f64::from(self.config.text_hidden_size).sqrt())?)
    }
}
