//! [`VisionEncoder`]: a checkpoint directory in, language-space soft tokens out.

use crate::siglip_tower::SiglipVisionTower;
use crate::trace::Trace;
use crate::unified_embedder::UnifiedVisionEmbedder;
use crate::{Checkpoint, ComputeDtype, Error, ModelConfig, ModelType, Result, VisionConfig};
use layers::{WeightStore, Weights};
use preprocess::{
    BudgetError, Patches, PixelValues, Preprocessor, ProcessorConfig, RgbImage, SoftTokenBudget, VideoPreprocessor,
    VideoProcessorConfig,
};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tensor::Array;

/// Who runs the encoder's ops. Both choices give the reference's bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Kernels {
    /// On MLX's CPU backend, the `kernels` crate's host kernels for every hot op (matmuls,
    /// quantized matmuls, attention, norms, GELU: [`layers::Execution::Host`]), over every
    /// core, when [`layers::HostParity::here`] finds this MLX build among those the kernels are
    /// proven to reproduce; on an unproven CPU build (aarch64, macOS, a libmlx built from
    /// source) and on other backends (Metal, CUDA), MLX's own ops. Chosen once, when the
    /// encoder is loaded.
    #[default]
    Auto,
    /// MLX's ops everywhere ([`layers::Execution::Mlx`]), the reference's op graph as is.
    Mlx,
}

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

/// Who runs the ops under `options` ([`Kernels`]), and why, in words (`inspect` shows it).
pub(crate) fn execution(options: &EncoderOptions) -> Result<(layers::Execution, String)> {
    if options.kernels == Kernels::Mlx {
        return Ok((layers::Execution::Mlx, "MLX's ops, as asked".to_owned()));
    }
    let device = tensor::Device::default_device()?;
    if device != tensor::Device::Cpu {
        return Ok((layers::Execution::Mlx, format!("MLX's ops on MLX's default device ({device:?})")));
    }
    let parity = layers::HostParity::here();
    Ok(if parity.is_proven() {
        (layers::Execution::Host, format!("the host kernels, {parity}"))
    } else {
        (layers::Execution::Mlx, format!("MLX's ops: {parity}"))
    })
}

/// One image prepared for its encoder by [`VisionEncoder::prepare`].
#[derive(Debug, Clone, PartialEq)]
pub enum PreparedImage {
    /// gemma4 image path: `[3, H, W]` float32 pixels.
    Pixels(PixelValues),
    /// gemma4 position-id path (video frames, pre-patchified input) or gemma4_unified model
    /// patches, padded, with positions.
    Patches(Patches),
}

/// The encoder of either family.
#[derive(Debug)]
pub(crate) enum Model {
    Siglip(SiglipVisionTower),
    Unified(UnifiedVisionEmbedder),
}

/// A loaded Gemma 4 vision encoder of either family, with its image processor settings.
///
/// `Sync`: the weights are evaluated arrays, so one encoder may serve many threads (each
/// thread runs its graphs on its own MLX stream).
#[derive(Debug)]
pub struct VisionEncoder {
    config: ModelConfig,
    processor: ProcessorConfig,
    options: EncoderOptions,
    model: Model,
    checkpoint: Checkpoint,
    used_keys: Vec<String>,
    identity: Mutex<Option<String>>,
}

impl VisionEncoder {
    /// Loads the encoder of the model directory `dir` (see [`Checkpoint`]): validates the
    /// config, reads only the vision tensors (checking each one's shape and dtype; quantized
    /// modules as the checkpoint's quantization says), and fails if the checkpoint holds vision
    /// tensors no block uses. A weight error names the file it looked in ([`Error::Weight`]).
    pub fn load(dir: impl AsRef<Path>, options: EncoderOptions) -> Result<VisionEncoder> {
        let checkpoint = Checkpoint::open(dir.as_ref())?;
        VisionEncoder::from_checkpoint(checkpoint, options)
    }

    /// Loads the encoder of an opened [`Checkpoint`] (see [`VisionEncoder::load`]).
    pub fn from_checkpoint(checkpoint: Checkpoint, options: EncoderOptions) -> Result<VisionEncoder> {
        let config = checkpoint.config().clone();
        let processor = ProcessorConfig::from_checkpoint_dir(checkpoint.dir(), config.model_type)?;
        let store = checkpoint.store();
        let compute = options.compute_dtype.weight_dtype();
        let weights = Weights::new(store as Arc<dyn WeightStore>)
            .with_compute_dtype(compute)
            .with_execution(execution(&options)?.0)
            .with_quantization(checkpoint.quantization());
        let model = match &config.vision {
            VisionConfig::Siglip(c) => SiglipVisionTower::load(&weights, c, config.text_hidden_size).map(Model::Siglip),
            VisionConfig::Unified(c) => {
                UnifiedVisionEmbedder::load(&weights, c, config.text_hidden_size).map(Model::Unified)
            }
        };
        let model = model.map_err(|e| checkpoint.locate(e))?;
        weights.ensure_all_used()?;
        let used_keys = weights.used_keys();
        Ok(VisionEncoder { config, processor, options, model, checkpoint, used_keys, identity: Mutex::new(None) })
    }

    /// The encoder itself.
    pub(crate) fn model(&self) -> &Model {
        &self.model
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
        &self.processor
    }

    /// The options the encoder was loaded with.
    pub fn options(&self) -> &EncoderOptions {
        &self.options
    }

    /// The image processor for a soft-token budget (`budget`, else the checkpoint's, else 280),
    /// checked once for this encoder: the resized images' pixels ([`Preprocessor::new`]) and,
    /// for gemma4, the attention over an image of `max_soft_tokens · pool²` patches
    /// ([`BudgetError::Attention`]), before any image is read or resized. Callers of
    /// [`encode_prepared`](Self::encode_prepared) make it once and prepare every image with it.
    pub fn preprocessor(&self, budget: Option<SoftTokenBudget>) -> Result<Preprocessor> {
        let preprocessor = Preprocessor::new(self.processor.clone().with_max_soft_tokens(budget))?;
        self.check_attention_budget(preprocessor.config())?;
        Ok(preprocessor)
    }

    /// Prepares a decoded image for this encoder (resize, rescale, layout).
    pub fn prepare(&self, image: &RgbImage, preprocessor: &Preprocessor) -> Result<PreparedImage> {
        Ok(match self.config.model_type {
            ModelType::Gemma4 => PreparedImage::Pixels(preprocessor.gemma4_image(image)?),
            ModelType::Gemma4Unified => PreparedImage::Patches(preprocessor.gemma4_unified_image(image)?.patches),
        })
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
        self.encode_with(&images, &preprocessor)
    }

    /// Prepares and encodes decoded images with the soft-token budget `budget` (see
    /// [`encode_files`](Self::encode_files)).
    pub fn encode_images(&self, images: &[RgbImage], budget: Option<SoftTokenBudget>) -> Result<Features> {
        self.encode_with(images, &self.preprocessor(budget)?)
    }

    /// Prepares decoded images with `preprocessor` (made by [`preprocessor`](Self::preprocessor))
    /// and encodes them.
    pub fn encode_with(&self, images: &[RgbImage], preprocessor: &Preprocessor) -> Result<Features> {
        let prepared = images.iter().map(|image| self.prepare(image, preprocessor)).collect::<Result<Vec<_>>>()?;
        self.encode_prepared(&prepared, None)
    }

    /// The video processor for a soft-token budget per frame: `budget` (one of
    /// [`preprocess::VIDEO_BUDGETS`]), else the checkpoint's (the `video_processor` settings of
    /// `processor_config.json` or `preprocessor_config.json`, read as mlx-vlm reads them for
    /// this family), else 70; checked for this encoder as [`preprocessor`](Self::preprocessor)
    /// checks an image's.
    pub fn video_preprocessor(&self, budget: Option<SoftTokenBudget>) -> Result<VideoPreprocessor> {
        let config = VideoProcessorConfig::from_checkpoint_dir(self.checkpoint.dir(), self.config.model_type)?;
        let video = VideoPreprocessor::new(config.with_max_soft_tokens(budget))?;
        self.check_attention_budget(&video.config().frame)?;
        Ok(video)
    }

    /// Prepares the frames of one video (decoded, all of one size) as mlx-vlm's video processor
    /// for this family does: the frames it keeps (at most `num_frames`, sampled uniformly), in
    /// order, each resized to the budget's video size, rescaled and cut into patches padded to
    /// the budget (gemma4: `patch_size` patches, its tower's position-id path; gemma4_unified:
    /// model patches).
    pub fn prepare_video(&self, frames: &[RgbImage], video: &VideoPreprocessor) -> Result<Vec<PreparedImage>> {
        video
            .sample(frames)?
            .into_iter()
            .map(|frame| {
                Ok(PreparedImage::Patches(match self.config.model_type {
                    ModelType::Gemma4 => video.gemma4_frame(frame)?,
                    ModelType::Gemma4Unified => video.gemma4_unified_frame(frame)?,
                }))
            })
            .collect()
    }

    /// Decodes frame files (EXIF orientation applied, as `load_image` does) and encodes them as
    /// the frames of one video (see [`encode_video_frames`](Self::encode_video_frames)); the
    /// budget is checked before any file is read.
    pub fn encode_video_files(&self, paths: &[impl AsRef<Path>], budget: Option<SoftTokenBudget>) -> Result<Features> {
        let video = self.video_preprocessor(budget)?;
        let frames = paths
            .iter()
            .map(|p| preprocess::open(p.as_ref(), &self.options.limits))
            .collect::<preprocess::Result<Vec<_>>>()?;
        self.encode_video_with(&frames, &video)
    }

    /// Prepares and encodes the frames of one video with the soft-token budget per frame
    /// `budget` (see [`video_preprocessor`](Self::video_preprocessor)). The features
    /// of each kept frame, in order, are what mlx-vlm computes for the video: gemma4's video path
    /// (`embed_vision(vision_tower(pixel_values_videos, video_position_ids))`), gemma4_unified's
    /// `get_video_features`; `soft_tokens` counts each kept frame's rows.
    pub fn encode_video_frames(&self, frames: &[RgbImage], budget: Option<SoftTokenBudget>) -> Result<Features> {
        self.encode_video_with(frames, &self.video_preprocessor(budget)?)
    }

    /// [`encode_video_frames`](Self::encode_video_frames) with `video` (made by
    /// [`video_preprocessor`](Self::video_preprocessor)).
    pub fn encode_video_with(&self, frames: &[RgbImage], video: &VideoPreprocessor) -> Result<Features> {
        let prepared = self.prepare_video(frames, video)?;
        self.encode_prepared(&prepared, None)
    }

    /// Encodes prepared images. gemma4 pixel inputs of one size run as one batch (images of
    /// different sizes in separate batches), padded patch inputs of one length likewise; the
    /// soft tokens are returned in input order. `trace` records each batch's stages.
    pub fn encode_prepared(&self, images: &[PreparedImage], mut trace: Option<&mut Trace>) -> Result<Features> {
        if images.is_empty() {
            return Err(Error::input("no images to encode"));
        }
        let (features, soft_tokens) = match &self.model {
            Model::Siglip(tower) => {
                let mut rows: Vec<Option<Array>> = (0..images.len()).map(|_| None).collect();
                let mut soft_tokens = vec![0; images.len()];
                for group in batches(images) {
                    let patches = match &images[group[0]] {
                        PreparedImage::Pixels(p) => {
                            let patch = tower.config().patch_size.max(1) as usize;
                            (p.height / patch).saturating_mul(p.width / patch)
                        }
                        PreparedImage::Patches(p) => p.len,
                    };
                    tower.check_attention(group.len(), patches, || {
                        format!("a batch of {} image(s) of {patches} patches", group.len())
                    })?;
                    let pooled = match &images[group[0]] {
                        PreparedImage::Pixels(_) => {
                            tower.pool_pixels(&stack_pixels(images, &group)?, trace.as_deref_mut())?
                        }
                        PreparedImage::Patches(_) => {
                            let (patches, positions) = stack_patches(images, &group)?;
                            tower.pool_patches(&patches, &positions, trace.as_deref_mut())?
                        }
                    };
                    let mut start = 0;
                    for (&i, &n) in group.iter().zip(&pooled.counts) {
                        rows[i] = Some(pooled.rows.slice_axis(0, start, start + n as i32)?);
                        soft_tokens[i] = n;
                        start += n as i32;
                    }
                }
                let rows: Vec<Array> = rows.into_iter().flatten().collect();
                let refs: Vec<&Array> = rows.iter().collect();
                let pooled = if refs.len() == 1 { rows[0].clone() } else { Array::concatenate(&refs, 0)? };
                (tower.project(&pooled, trace)?, soft_tokens)
            }
            Model::Unified(embedder) => {
                let all: Vec<usize> = (0..images.len()).collect();
                let (patches, positions) = stack_patches(images, &all)?;
                let soft_tokens = images
                    .iter()
                    .map(|image| match image {
                        PreparedImage::Patches(p) => p.real,
                        PreparedImage::Pixels(p) => p.soft_tokens,
                    })
                    .collect();
                (embedder.encode_patches(&patches, Some(&positions), trace)?, soft_tokens)
            }
        };
        Ok(Features { features: self.scaled_features(features)?, soft_tokens })
    }

    /// `features` divided by `√text_hidden` when the options ask for it.
    pub(crate) fn scaled_features(&self, features: Array) -> Result<Array> {
        if !self.options.divide_by_embed_scale {
            return Ok(features);
        }
        Ok(features.div(f64::from(self.config.text_hidden_size).sqrt())?)
    }

    /// Refuses a budget whose images the encoder could not attend over in memory (gemma4: one
    /// image or frame of `max_soft_tokens · pool²` patches of the processor settings `config`,
    /// the bytes of [`SiglipVisionTower::check_attention`]). gemma4_unified has no attention:
    /// its inputs are bounded by the preprocessor's pixel bound.
    fn check_attention_budget(&self, config: &ProcessorConfig) -> Result<()> {
        let Model::Siglip(tower) = &self.model else { return Ok(()) };
        let patches = config.max_patches();
        let (bytes, limit) = (tower.attention_bytes(1, u128::from(patches)), tensor::memory::max_array_bytes());
        if bytes > limit as u128 {
            return Err(BudgetError::Attention { budget: config.max_soft_tokens.get(), patches, bytes, limit }.into());
        }
        Ok(())
    }

    /// SHA-256 (hex) identifying what this encoder computes: the parsed model config, the
    /// processor settings, the options that change the features (compute dtype, the embed-scale
    /// division), the MLX release, and the fingerprint of every vision tensor it loaded (names,
    /// dtypes, shapes, bytes as stored). Equal identities give equal features for equal image
    /// bytes and budgets, so it keys a feature cache. Each part is written under an explicit
    /// name ([`identity_parts`](Self::identity_parts)), never a type's debug form, so renaming
    /// a Rust item changes no identity. Computed once (it reads the weights).
    pub fn cache_identity(&self) -> Result<String> {
        let mut cached = self.identity.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(identity) = cached.as_ref() {
            return Ok(identity.clone());
        }
        let mut hasher = Sha256::new();
        for part in self.identity_parts()? {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        let identity: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
        *cached = Some(identity.clone());
        Ok(identity)
    }

    /// The parts [`cache_identity`](Self::cache_identity) hashes, in order, each `name value`.
    /// Who runs the ops is left out: every choice gives the same bits.
    pub fn identity_parts(&self) -> Result<Vec<String>> {
        let tensors = self
            .used_keys
            .iter()
            .map(|key| Ok((key.as_str(), self.checkpoint.store().load(key)?)))
            .collect::<layers::Result<Vec<_>>>()?;
        let fingerprint = tensor::fingerprint(tensors.iter().map(|(k, a)| (*k, a)))?;
        let processor = serde_json::to_string(&self.processor).map_err(|e| Error::input(e.to_string()))?;
        Ok(vec![
            "format gemma-vision/3".to_owned(),
            format!("config {}", self.config.canonical_json()),
            format!("processor {processor}"),
            format!("compute_dtype {}", self.options.compute_dtype.as_str()),
            format!("divide_by_embed_scale {}", self.options.divide_by_embed_scale),
            format!("mlx {}", tensor::info::mlx_build_version()),
            format!("weights {fingerprint}"),
        ])
    }
}

/// Indices of `images` grouped into batches of one kind and shape, groups in order of first
/// appearance, indices in input order.
fn batches(images: &[PreparedImage]) -> Vec<Vec<usize>> {
    let key = |image: &PreparedImage| match image {
        PreparedImage::Pixels(p) => (0, p.height, p.width),
        PreparedImage::Patches(p) => (1, p.len, p.dim),
    };
    let mut groups: Vec<((i32, usize, usize), Vec<usize>)> = Vec::new();
    for (i, image) in images.iter().enumerate() {
        match groups.iter_mut().find(|(k, _)| *k == key(image)) {
            Some((_, members)) => members.push(i),
            None => groups.push((key(image), vec![i])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// `[B, 3, H, W]` float32 from same-sized pixel inputs.
fn stack_pixels(images: &[PreparedImage], group: &[usize]) -> Result<Array> {
    let mut data = Vec::new();
    let (mut h, mut w) = (0, 0);
    for &i in group {
        let PreparedImage::Pixels(p) = &images[i] else { return Err(Error::input("mixed inputs in a batch")) };
        (h, w) = (p.height, p.width);
        data.extend_from_slice(&p.data);
    }
    Ok(Array::from_slice(&data, &[group.len() as i32, 3, h as i32, w as i32])?)
}

/// `[B, L, D]` float32 patches and `[B, L, 2]` int64 positions from same-length patch inputs.
fn stack_patches(images: &[PreparedImage], group: &[usize]) -> Result<(Array, Array)> {
    let (mut data, mut positions) = (Vec::new(), Vec::new());
    let (mut len, mut dim) = (0, 0);
    for &i in group {
        let PreparedImage::Patches(p) = &images[i] else { return Err(Error::input("mixed inputs in a batch")) };
        if (len, dim) != (0, 0) && (len, dim) != (p.len, p.dim) {
            return Err(Error::input(format!("patch inputs of {}×{} and {len}×{dim} in one call", p.len, p.dim)));
        }
        (len, dim) = (p.len, p.dim);
        data.extend_from_slice(&p.data);
        positions.extend_from_slice(&p.positions);
    }
    let b = group.len() as i32;
    Ok((Array::from_slice(&data, &[b, len as i32, dim as i32])?, Array::from_slice(&positions, &[b, len as i32, 2])?))
}
