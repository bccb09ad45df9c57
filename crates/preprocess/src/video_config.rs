//! The video processor's settings, as mlx-vlm reads them from a checkpoint.

use crate::{BudgetError, BudgetSource, Error, ProcessorConfig, Result, SettingsFile, SettingsLayout, SoftTokenBudget};
use serde::Deserialize;
use std::path::Path;

/// The soft-token budgets per frame `Gemma4VideoProcessor` accepts (any other is its
/// `ValueError`).
pub const VIDEO_BUDGETS: [u32; 5] = [70, 140, 280, 560, 1120];

/// `Gemma4VideoProcessor`'s (gemma4) or `Gemma4UnifiedVideoProcessor`'s (gemma4_unified)
/// settings: how each frame of a video becomes encoder input, and how many frames are kept.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoProcessorConfig {
    /// The per-frame steps: resize (to `max_soft_tokens · pool²` patches of `patch_size`),
    /// rescale, normalisation, and the budget per frame (`max_soft_tokens`, one of
    /// [`VIDEO_BUDGETS`]; the default is 70). `image_mean` / `image_std` are always given: the
    /// video processors' defaults are 0 and 1, not the image processor's 0.5.
    pub frame: ProcessorConfig,
    /// At most this many frames of a video are kept (`num_frames`, 32); a longer video is
    /// sampled uniformly (see [`sampled_frames`](Self::sampled_frames)).
    pub num_frames: u32,
    /// gemma4_unified: the side of a model patch in pixels (`model_patch_size`, default
    /// `patch_size · pooling_kernel_size`).
    pub model_patch_size: u32,
}

/// The keyword arguments of the video processors' `__init__`, with their defaults.
#[derive(Debug, Deserialize)]
#[serde(default)]
struct VideoSettings {
    patch_size: u32,
    max_soft_tokens: Option<u32>,
    num_soft_tokens: Option<u32>,
    pooling_kernel_size: u32,
    num_frames: u32,
    do_resize: bool,
    do_rescale: bool,
    rescale_factor: f64,
    do_normalize: bool,
    image_mean: Option<Vec<f64>>,
    image_std: Option<Vec<f64>>,
    model_patch_size: Option<u32>,
}

impl Default for VideoSettings {
    fn default() -> Self {
        VideoSettings {
            patch_size: 16,
            max_soft_tokens: None,
            num_soft_tokens: None,
            pooling_kernel_size: 3,
            num_frames: 32,
            do_resize: true,
            do_rescale: true,
            rescale_factor: 1.0 / 255.0,
            do_normalize: false,
            image_mean: None,
            image_std: None,
            model_patch_size: None,
        }
    }
}

/// Keys a video processor that inherits the image settings (gemma4_unified's loader) copies from
/// the image processor's settings when the file has no `"video_processor"` object.
const INHERITED_IMAGE_KEYS: &[&str] = &[
    "patch_size",
    "pooling_kernel_size",
    "model_patch_size",
    "mm_posemb_size",
    "do_rescale",
    "rescale_factor",
    "do_normalize",
    "image_mean",
    "image_std",
];

impl VideoProcessorConfig {
    /// Reads the video-processor settings out of a `processor_config.json` text exactly where
    /// the reference's `from_pretrained` looks for a family of this `layout`: the
    /// `"video_processor"` object if there is one; else, with
    /// [`video_inherits_image_settings`](SettingsLayout::video_inherits_image_settings), the
    /// image processor's patch, pooling, rescale and normalisation settings, otherwise nothing
    /// (all defaults: 16-pixel patches whatever the image processor's are). With
    /// [`num_soft_tokens_alias`](SettingsLayout::num_soft_tokens_alias), `num_soft_tokens`
    /// stands for `max_soft_tokens` when the latter is absent.
    ///
    /// Plain data: [`VideoPreprocessor::new`](crate::VideoPreprocessor::new) checks it.
    pub fn from_json(text: &str, layout: SettingsLayout) -> Result<Self> {
        let file: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Error::invalid("video processor config", e))?;
        let object = |key: &str| file.get(key).and_then(serde_json::Value::as_object).cloned();
        let mut settings = match object("video_processor") {
            Some(video) => video,
            None if layout.video_inherits_image_settings => {
                let image = object("image_processor").unwrap_or_default();
                image.into_iter().filter(|(k, _)| INHERITED_IMAGE_KEYS.contains(&k.as_str())).collect()
            }
            None => serde_json::Map::new(),
        };
        // `x or default` in the reference: null and empty lists mean the default.
        settings.retain(|_, v| !v.is_null());
        let settings: VideoSettings = serde_json::from_value(serde_json::Value::Object(settings))
            .map_err(|e| Error::invalid("video processor config", e))?;
        Self::from_settings(settings, layout)
    }

    /// The settings of a checkpoint directory ([`SettingsFile::find`]), else the defaults.
    pub fn from_checkpoint_dir(dir: impl AsRef<Path>, layout: SettingsLayout) -> Result<Self> {
        Self::from_settings_file(SettingsFile::find(dir)?.as_ref(), layout)
    }

    /// The settings in a checkpoint's settings file (the file the reference reads the image
    /// settings from), else the defaults; the frame settings' `budget_source` names the file a
    /// budget came from, and a refusal is an [`Error::Config`] naming it.
    pub fn from_settings_file(file: Option<&SettingsFile>, layout: SettingsLayout) -> Result<Self> {
        let Some(file) = file else {
            return Self::from_settings(VideoSettings::default(), layout);
        };
        let mut config = Self::from_json(file.text(), layout).map_err(|e| file.refusal(e))?;
        if config.frame.budget_source == BudgetSource::ProcessorConfig {
            config.frame.budget_source = file.source();
        }
        Ok(config)
    }

    fn from_settings(s: VideoSettings, layout: SettingsLayout) -> Result<Self> {
        let budget =
            if layout.num_soft_tokens_alias { s.max_soft_tokens.or(s.num_soft_tokens) } else { s.max_soft_tokens };
        let or_default = |values: Option<Vec<f64>>, default: f64| {
            Some(values.filter(|v| !v.is_empty()).unwrap_or_else(|| vec![default; 3]))
        };
        let frame = ProcessorConfig {
            do_resize: s.do_resize,
            do_rescale: s.do_rescale,
            rescale_factor: s.rescale_factor,
            do_normalize: s.do_normalize,
            image_mean: or_default(s.image_mean, 0.0),
            image_std: or_default(s.image_std, 1.0),
            patch_size: s.patch_size,
            pooling_kernel_size: s.pooling_kernel_size,
            max_soft_tokens: SoftTokenBudget::new(budget.unwrap_or(VIDEO_BUDGETS[0]))?,
            // The file the settings were read from names the budget; absent, the video default.
            budget_source: if budget.is_some() { BudgetSource::ProcessorConfig } else { BudgetSource::Default },
        };
        let model_patch_size = s.model_patch_size.filter(|&m| m > 0).unwrap_or_else(|| frame.model_patch_size());
        Ok(VideoProcessorConfig { frame, num_frames: s.num_frames, model_patch_size })
    }

    /// The same settings with the caller's budget per frame, if any.
    pub fn with_max_soft_tokens(mut self, budget: Option<SoftTokenBudget>) -> Self {
        self.frame = self.frame.with_max_soft_tokens(budget);
        self
    }

    /// Checks what the video processors check (a budget among [`VIDEO_BUDGETS`]) and what the
    /// pipeline needs (at least one frame); the frame settings are
    /// [`Preprocessor::new`](crate::Preprocessor::new)'s to check. Called by
    /// [`VideoPreprocessor::new`](crate::VideoPreprocessor::new) only.
    pub(crate) fn check_video_settings(&self) -> Result<()> {
        video_budget(self.frame.max_soft_tokens.get())?;
        if self.num_frames == 0 {
            return Err(Error::invalid("num_frames", "a video keeps at least one frame"));
        }
        Ok(())
    }

    /// The indices of the frames kept of a video of `count` frames
    /// (`Gemma4VideoProcessor._sample_frames`): all of them when `count ≤ num_frames`, else
    /// `round(linspace(0, count − 1, num_frames))` with NumPy's arithmetic (`i · step` in
    /// double, the last one exactly `count − 1`, rounded half to even; one frame kept is frame 0).
    pub fn sampled_frames(&self, count: usize) -> Vec<usize> {
        let kept = self.num_frames as usize;
        if count <= kept {
            return (0..count).collect();
        }
        if kept == 1 {
            return vec![0];
        }
        let step = (count - 1) as f64 / (kept - 1) as f64;
        (0..kept)
            .map(|i| if i + 1 == kept { count - 1 } else { (i as f64 * step).round_ties_even() as usize })
            .collect()
    }
}

/// `tokens` as a budget per frame: one of [`VIDEO_BUDGETS`], else [`BudgetError::NotAVideoBudget`].
fn video_budget(tokens: u32) -> Result<SoftTokenBudget> {
    match SoftTokenBudget::new(tokens) {
        Ok(budget) if VIDEO_BUDGETS.contains(&tokens) => Ok(budget),
        _ => Err(BudgetError::NotAVideoBudget { budget: tokens, allowed: &VIDEO_BUDGETS }.into()),
    }
}
