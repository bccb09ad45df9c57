//! The image processor's settings, as mlx-vlm reads them from a checkpoint.

use crate::{Result, SettingsFile, SettingsLayout, SoftTokenBudget};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Where a soft-token budget came from, in the order they are consulted: the caller, the
/// checkpoint's `processor_config.json`, its `preprocessor_config.json`, the default (280).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
pub enum BudgetSource {
    /// The caller's value (`--max-soft-tokens`, `max_soft_tokens=`).
    #[serde(rename = "flag")]
    Flag,
    #[serde(rename = "processor_config.json")]
    ProcessorConfig,
    #[serde(rename = "preprocessor_config.json")]
    PreprocessorConfig,
    /// The reference's default, 280 (no file sets one).
    #[default]
    #[serde(rename = "default")]
    Default,
}

impl BudgetSource {
    /// The name used in the serialised form: `flag`, a file name, or `default`.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetSource::Flag => "flag",
            BudgetSource::ProcessorConfig => "processor_config.json",
            BudgetSource::PreprocessorConfig => "preprocessor_config.json",
            BudgetSource::Default => "default",
        }
    }
}

/// `Gemma4ImageProcessor`'s settings (its `__init__` defaults), deserialised leniently: unknown
/// keys are ignored, missing keys keep the default.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct ProcessorConfig {
    /// Resize to the budget's size (`True`).
    pub do_resize: bool,
    /// Multiply by `rescale_factor` (`True`).
    pub do_rescale: bool,
    /// `1 / 255`, applied as `u8 as f32 * (rescale_factor as f32)` like NumPy's
    /// `image.astype(np.float32) * rescale_factor`.
    pub rescale_factor: f64,
    /// Subtract `image_mean` and divide by `image_std`, per channel in f32 (`False`).
    pub do_normalize: bool,
    /// Per-channel mean; `None` (or empty) means the processor's `[0.5, 0.5, 0.5]`.
    pub image_mean: Option<Vec<f64>>,
    /// Per-channel standard deviation; `None` (or empty) means `[0.5, 0.5, 0.5]`.
    pub image_std: Option<Vec<f64>>,
    /// Side of the encoder's patch in pixels (16).
    pub patch_size: u32,
    /// Side of the pooling window in patches (3).
    pub pooling_kernel_size: u32,
    /// The soft-token budget per image (280; presets 70/140/280/560/1120, any positive value
    /// works for images).
    pub max_soft_tokens: SoftTokenBudget,
    /// Where `max_soft_tokens` came from (not a setting: left out of the serialised form).
    #[serde(skip)]
    pub budget_source: BudgetSource,
}

impl Default for ProcessorConfig {
    fn default() -> Self {
        ProcessorConfig {
            do_resize: true,
            do_rescale: true,
            rescale_factor: 1.0 / 255.0,
            do_normalize: false,
            image_mean: None,
            image_std: None,
            patch_size: 16,
            pooling_kernel_size: 3,
            max_soft_tokens: SoftTokenBudget::DEFAULT,
            budget_source: BudgetSource::Default,
        }
    }
}

/// Keys the gemma4 loader copies out of a flat (preprocessor_config.json style) file.
const FLAT_KEYS: &[&str] = &[
    "patch_size",
    "max_soft_tokens",
    "pooling_kernel_size",
    "do_resize",
    "do_rescale",
    "do_normalize",
    "rescale_factor",
    "image_mean",
    "image_std",
    "size",
];

impl ProcessorConfig {
    /// Reads the image-processor settings out of a `processor_config.json` text exactly where
    /// the reference's `from_pretrained` looks for a family of this `layout`: the
    /// `"image_processor"` object if there is one; otherwise, with
    /// [`flat_image_settings`](SettingsLayout::flat_image_settings), when the file has no
    /// `"image_processor_type"` and has one of `patch_size` / `max_soft_tokens` /
    /// `pooling_kernel_size` at the top level, those top-level keys (a flat file); otherwise
    /// nothing (all defaults). With [`num_soft_tokens_alias`](SettingsLayout::num_soft_tokens_alias),
    /// `num_soft_tokens` stands for `max_soft_tokens` when the latter is absent.
    ///
    /// A budget found there is recorded as [`BudgetSource::ProcessorConfig`] (the file the
    /// reference reads first; [`from_checkpoint_dir`](Self::from_checkpoint_dir) names the
    /// file it read).
    pub fn from_json(text: &str, layout: SettingsLayout) -> std::result::Result<Self, serde_json::Error> {
        let file: serde_json::Value = serde_json::from_str(text)?;
        let nested = file.get("image_processor").filter(|v| v.is_object()).cloned();
        let mut settings = match nested {
            Some(nested) => nested,
            None if layout.flat_image_settings
                && file.get("image_processor_type").is_none()
                && ["patch_size", "max_soft_tokens", "pooling_kernel_size"].iter().any(|k| file.get(k).is_some()) =>
            {
                let picked = FLAT_KEYS.iter().filter_map(|k| Some(((*k).to_owned(), file.get(k)?.clone())));
                serde_json::Value::Object(picked.collect())
            }
            None => serde_json::Value::Object(Default::default()),
        };
        if let serde_json::Value::Object(map) = &mut settings {
            let alias = map.get("num_soft_tokens").filter(|v| !v.is_null()).cloned();
            if let (true, false, Some(n)) = (layout.num_soft_tokens_alias, map.contains_key("max_soft_tokens"), alias) {
                map.insert("max_soft_tokens".to_owned(), n);
            }
            // `x or default` in the reference: null and empty lists mean the default.
            map.retain(|_, v| !v.is_null());
        }
        let has_budget = settings.get("max_soft_tokens").is_some();
        let mut config: ProcessorConfig = serde_json::from_value(settings)?;
        config.budget_source = if has_budget { BudgetSource::ProcessorConfig } else { BudgetSource::Default };
        Ok(config)
    }

    /// The settings of a checkpoint directory ([`SettingsFile::find`]), else the defaults.
    pub fn from_checkpoint_dir(dir: impl AsRef<Path>, layout: SettingsLayout) -> Result<Self> {
        Self::from_settings_file(SettingsFile::find(dir)?.as_ref(), layout)
    }

    /// The settings in a checkpoint's settings file, else the defaults (as mlx-vlm does for a
    /// local path), with [`budget_source`](Self::budget_source) naming the file the budget
    /// came from. Plain data: [`Preprocessor::new`](crate::Preprocessor::new) checks it; a text
    /// that does not parse is an [`Error::Config`](crate::Error::Config) naming the file.
    pub fn from_settings_file(file: Option<&SettingsFile>, layout: SettingsLayout) -> Result<Self> {
        let Some(file) = file else {
            return Ok(Self::default());
        };
        let mut config = Self::from_json(file.text(), layout).map_err(|e| file.refusal(e))?;
        if config.budget_source != BudgetSource::Default {
            config.budget_source = file.source();
        }
        Ok(config)
    }

    /// The same settings with the caller's budget, if any (the processor's `max_soft_tokens`
    /// keyword argument), recorded as [`BudgetSource::Flag`].
    pub fn with_max_soft_tokens(mut self, budget: Option<SoftTokenBudget>) -> Self {
        if let Some(budget) = budget {
            self.max_soft_tokens = budget;
            self.budget_source = BudgetSource::Flag;
        }
        self
    }

    /// `max_soft_tokens * pooling_kernel_size^2`, the patch budget of the size formula
    /// (saturating at `u64::MAX`, which [`Preprocessor::new`](crate::Preprocessor::new) refuses).
    pub fn max_patches(&self) -> u64 {
        let pool = u64::from(self.pooling_kernel_size);
        u64::from(self.max_soft_tokens.get()).saturating_mul(pool).saturating_mul(pool)
    }

    /// `patch_size * pooling_kernel_size` (48): the side of one soft token in pixels, and the
    /// unified encoder's model patch.
    pub fn model_patch_size(&self) -> u32 {
        self.patch_size.saturating_mul(self.pooling_kernel_size)
    }

    /// The per-channel mean and std as the reference's `np.array(..., dtype=np.float32)`.
    pub fn mean_std_f32(&self) -> ([f32; 3], [f32; 3]) {
        (channels_f32(self.image_mean.as_deref()), channels_f32(self.image_std.as_deref()))
    }

    /// Checks what the pipeline needs: positive sizes, three means and stds when normalising
    /// (the budget is a [`SoftTokenBudget`], positive by construction). The one check of the
    /// settings, made by [`Preprocessor::new`](crate::Preprocessor::new).
    pub(crate) fn validated(self) -> std::result::Result<Self, String> {
        if self.patch_size == 0 || self.pooling_kernel_size == 0 {
            return Err(format!(
                "patch_size ({}) and pooling_kernel_size ({}) must be positive",
                self.patch_size, self.pooling_kernel_size
            ));
        }
        for (name, values) in [("image_mean", &self.image_mean), ("image_std", &self.image_std)] {
            if let Some(v) = values.as_deref().filter(|v| !v.is_empty() && v.len() != 3 && v.len() != 1) {
                return Err(format!("{name} has {} values; expected 3", v.len()));
            }
        }
        Ok(self)
    }
}

/// `np.array(values or [0.5] * 3, dtype=np.float32)` broadcast over three channels.
fn channels_f32(values: Option<&[f64]>) -> [f32; 3] {
    match values {
        Some([v]) => [*v as f32; 3],
        Some([a, b, c]) => [*a as f32, *b as f32, *c as f32],
        _ => [0.5; 3],
    }
}
