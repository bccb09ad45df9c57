//! gemma4 (e2b, e4b, 26B-A4B, 31B): mlx-vlm's `models/gemma4`, a SigLIP-style vision tower
//! ([`SiglipVisionTower`]) and `Gemma4Processor`'s image and video processors.

use super::{Family, FamilyModel, ModelType};
use crate::prepared_image::{batches, stack_patches, stack_pixels};
use crate::siglip_tower::{PooledRows, SiglipVisionTower};
use crate::trace::Trace;
use crate::{BatchKey, Error, ModelInputs, PreparedImage, Result, SiglipConfig, VisionConfig};
use preprocess::{Preprocessor, RgbImage, SettingsLayout, VideoPreprocessor};
use serde::Deserialize;
use tensor::Array;

/// The gemma4 family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gemma4;

/// The 0-d clip bounds of clippable linears.
const CLIP_SUFFIXES: [&str; 4] = ["input_max", "input_min", "output_max", "output_min"];

/// The tower's linears mlx-vlm 0.7.10 can run quantized, under `vision_tower.encoder.layers.<i>.`.
const LAYER_LINEARS: [&str; 7] = [
    "self_attn.q_proj.linear",
    "self_attn.k_proj.linear",
    "self_attn.v_proj.linear",
    "self_attn.o_proj.linear",
    "mlp.gate_proj.linear",
    "mlp.up_proj.linear",
    "mlp.down_proj.linear",
];

impl Family for Gemma4 {
    fn model_type(&self) -> ModelType {
        ModelType::Gemma4
    }

    fn vision_prefixes(&self) -> &'static [&'static str] {
        &["vision_tower.", "embed_vision."]
    }

    /// gemma4's `Model.sanitize`: the clip bounds of the vision tower are dropped unless the
    /// config uses clipped linears, and those of every module but the towers always.
    fn drops_tensor(&self, key: &str, use_clipped_linears: bool) -> bool {
        if !CLIP_SUFFIXES.iter().any(|s| key.contains(s)) {
            return false;
        }
        let in_vision_tower = key.contains("vision_tower");
        (in_vision_tower && !use_clipped_linears) || (!in_vision_tower && !key.contains("audio_tower"))
    }

    /// The projector and the tower's clippable linears.
    fn runs_quantized(&self, module: &str) -> bool {
        if module == "embed_vision.embedding_projection" {
            return true;
        }
        let Some(rest) = module.strip_prefix("vision_tower.encoder.layers.") else { return false };
        let Some((layer, linear)) = rest.split_once('.') else { return false };
        layer.parse::<u32>().is_ok() && LAYER_LINEARS.contains(&linear)
    }

    /// The patch embedder: the reference casts the pixels to its weight's dtype, which a
    /// quantized weight makes uint32.
    fn unquantizable_linear(&self) -> Option<&'static str> {
        Some("vision_tower.patch_embedder.input_proj")
    }

    fn settings_layout(&self) -> SettingsLayout {
        SettingsLayout { flat_image_settings: true, num_soft_tokens_alias: false, video_inherits_image_settings: false }
    }

    fn vision_config(&self, json: &serde_json::Value) -> std::result::Result<VisionConfig, serde_json::Error> {
        SiglipConfig::deserialize(json).map(VisionConfig::Siglip)
    }

    fn default_text_hidden_size(&self) -> i32 {
        1536
    }

    /// `Gemma4ImageProcessor.preprocess`: resized, rescaled, `[3, H, W]` pixels.
    fn prepare_image(&self, image: &RgbImage, preprocessor: &Preprocessor) -> Result<PreparedImage> {
        Ok(PreparedImage::Pixels(preprocessor.gemma4_image(image)?))
    }

    /// `Gemma4VideoProcessor`: `patch_size` patches with positions, the tower's position-id path.
    fn prepare_frame(&self, frame: &RgbImage, video: &VideoPreprocessor) -> Result<PreparedImage> {
        Ok(PreparedImage::Patches(video.gemma4_frame(frame)?))
    }

    fn batch_key(&self, image: &PreparedImage) -> BatchKey {
        image.shape_key()
    }

    /// `(H // patch) · (W // patch) // pool²`.
    fn soft_tokens(&self, height: u32, width: u32, preprocessor: &Preprocessor) -> u64 {
        let (p, k) = (u64::from(preprocessor.patch_size().get()), u64::from(preprocessor.pooling_kernel_size().get()));
        (u64::from(height) / p) * (u64::from(width) / p) / (k * k)
    }

    fn model_features_have_batch_axis(&self) -> bool {
        true
    }

    fn takes_input_lists(&self) -> bool {
        true
    }
}

/// One batch of the tower's input.
enum Batch {
    /// `[B, 3, H, W]` float32 pixels.
    Pixels(Array),
    /// Patch rows `[B, L, D]` (or `[B, T, L, D]`) with their position ids.
    Patches(Array, Array),
}

/// The tower's pooled rows of one batch of `count` inputs (`noun`: what they are) of `patches`
/// patches each, after the attention check ([`SiglipVisionTower::check_attention`]); the
/// batch's arrays are made by `batch` only once the check has passed.
fn pool_batch(
    tower: &SiglipVisionTower,
    (count, patches, noun): (usize, usize, &str),
    batch: impl FnOnce() -> Result<Batch>,
    trace: Option<&mut Trace>,
) -> Result<PooledRows> {
    tower.check_attention(count, patches, || format!("a batch of {count} {noun} of {patches} patches"))?;
    match batch()? {
        Batch::Pixels(pixels) => tower.pool_pixels(&pixels, trace),
        Batch::Patches(patches, positions) => tower.pool_patches(&patches, &positions, trace),
    }
}

/// `embed_vision` over pooled rows, concatenated in order.
fn project(tower: &SiglipVisionTower, rows: &[Array], trace: Option<&mut Trace>) -> Result<Array> {
    let rows = match rows {
        [one] => one.clone(),
        _ => Array::concatenate(&rows.iter().collect::<Vec<_>>(), 0)?,
    };
    tower.project(&rows, trace)
}

impl FamilyModel for SiglipVisionTower {
    /// Pixel inputs of one size run as one batch (images of different sizes in separate
    /// batches), padded patch inputs of one length likewise; each image's rows are put back in
    /// input order before `embed_vision`.
    fn encode(&self, images: &[PreparedImage], mut trace: Option<&mut Trace>) -> Result<(Array, Vec<usize>)> {
        let mut rows: Vec<Option<Array>> = (0..images.len()).map(|_| None).collect();
        let mut soft_tokens = vec![0; images.len()];
        for group in batches(images, |image| Gemma4.batch_key(image)) {
            let first = group.first().and_then(|&i| images.get(i));
            let pooled = match first {
                Some(PreparedImage::Pixels(p)) => {
                    let patch = self.patch_size() as usize;
                    let patches = (p.height / patch).saturating_mul(p.width / patch);
                    let batch = || Ok(Batch::Pixels(stack_pixels(images, &group)?));
                    pool_batch(self, (group.len(), patches, "image(s)"), batch, trace.as_deref_mut())?
                }
                Some(PreparedImage::Patches(p)) => {
                    let batch = || stack_patches(images, &group).map(|(x, positions)| Batch::Patches(x, positions));
                    pool_batch(self, (group.len(), p.len, "image(s)"), batch, trace.as_deref_mut())?
                }
                None => continue,
            };
            let mut start = 0;
            for (&i, &n) in group.iter().zip(&pooled.counts) {
                rows[i] = Some(pooled.rows.slice_axis(0, start, start + n as i32)?);
                soft_tokens[i] = n;
                start += n as i32;
            }
        }
        let rows: Vec<Array> = rows.into_iter().flatten().collect();
        Ok((project(self, &rows, trace)?, soft_tokens))
    }

    /// `Model.encode_image(pixel_values, position_ids)`: each array of the inputs is one batch,
    /// in order.
    fn encode_model_inputs(&self, inputs: &ModelInputs) -> Result<(Array, Vec<usize>)> {
        let pooled = match inputs {
            ModelInputs::Pixels(pixels) => vec![pool_pixels(self, pixels)?],
            ModelInputs::PixelList(images) => {
                images.iter().map(|image| pool_pixels(self, image)).collect::<Result<_>>()?
            }
            ModelInputs::Patches { patches, positions: Some(positions) } => {
                vec![pool_patches(self, patches, positions)?]
            }
            ModelInputs::Patches { positions: None, .. } => {
                return Err(Error::ModelInput {
                    input: "position ids",
                    expected: "position ids with gemma4 patch rows (its tower reads inputs without ids as pixels)"
                        .to_owned(),
                    found: "none".into(),
                });
            }
            ModelInputs::PatchList(videos) => videos
                .iter()
                .map(|(patches, positions)| pool_patches(self, patches, positions))
                .collect::<Result<_>>()?,
        };
        let soft_tokens = pooled.iter().flat_map(|p| p.counts.iter().copied()).collect();
        let rows: Vec<Array> = pooled.into_iter().map(|p| p.rows).collect();
        Ok((project(self, &rows, None)?, soft_tokens))
    }

    /// One image or frame of `preprocessor`'s most patches (`max_soft_tokens · pool²`), against
    /// [`SiglipVisionTower::check_attention`]'s bound.
    fn check_attention_budget(&self, preprocessor: &Preprocessor) -> Result<()> {
        let (budget, patches) = (preprocessor.config().max_soft_tokens.get(), preprocessor.max_patches());
        let what = || format!("an image at a budget of {budget} soft tokens (up to {patches} patches)");
        self.check_attention(1, patches as usize, what)
    }

    /// Pixels of one pooling window: `(patch_size · pooling_kernel_size)²`.
    fn smallest_input(&self) -> Result<PreparedImage> {
        let c = self.config();
        let side = usize::try_from(i64::from(c.patch_size) * i64::from(c.pooling_kernel_size))
            .map_err(|_| Error::input("the patch size does not fit in memory"))?;
        Ok(PreparedImage::Pixels(preprocess::PixelValues {
            data: vec![0.0; 3 * side * side],
            height: side,
            width: side,
            soft_tokens: 1,
        }))
    }
}

/// The pooled rows of one pixel batch `[B, 3, H, W]` of mlx-vlm's inputs.
fn pool_pixels(tower: &SiglipVisionTower, pixels: &Array) -> Result<PooledRows> {
    let shape = pixels.shape();
    let patch = tower.patch_size();
    let (count, height, width) = (shape[0], shape[2], shape[3]);
    let patches = (height / patch).max(0) as usize * (width / patch).max(0) as usize;
    pool_batch(tower, (count as usize, patches, "image(s)"), || Ok(Batch::Pixels(pixels.clone())), None)
}

/// The pooled rows of one batch of mlx-vlm's patch rows (`[B, L, D]` or frames `[B, T, L, D]`).
fn pool_patches(tower: &SiglipVisionTower, patches: &Array, positions: &Array) -> Result<PooledRows> {
    let shape = patches.shape();
    let rows = shape[..shape.len() - 2].iter().product::<i32>() as usize;
    let len = shape[shape.len() - 2] as usize;
    let batch = || Ok(Batch::Patches(patches.clone(), positions.clone()));
    pool_batch(tower, (rows, len, "frame(s)"), batch, None)
}
