//! [`SettingsLayout`]: where a model family's processors read their settings in a file.

/// Where in a `processor_config.json` (or `preprocessor_config.json`) a model family's
/// processors find their settings: plain data each family gives (`vision`'s families), read by
/// [`ProcessorConfig::from_json`](crate::ProcessorConfig::from_json) and
/// [`VideoProcessorConfig::from_json`](crate::VideoProcessorConfig::from_json).
///
/// The `"image_processor"` and `"video_processor"` objects are read wherever they are present,
/// whatever the layout; the fields say what happens without them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SettingsLayout {
    /// Without an `"image_processor"` object, a file without `"image_processor_type"` that has
    /// `patch_size`, `max_soft_tokens` or `pooling_kernel_size` at the top level is a flat file:
    /// the image settings are its top-level keys (gemma4's `Gemma4Processor.from_pretrained`).
    /// Otherwise such a file gives the defaults.
    pub flat_image_settings: bool,
    /// `num_soft_tokens` stands for `max_soft_tokens` when the latter is absent, in the image
    /// and the video settings (gemma4_unified).
    pub num_soft_tokens_alias: bool,
    /// Without a `"video_processor"` object, the video processor takes the image processor's
    /// patch, pooling, rescale and normalisation settings (gemma4_unified); otherwise it takes
    /// its own defaults (16-pixel patches whatever the image processor's are).
    pub video_inherits_image_settings: bool,
}
