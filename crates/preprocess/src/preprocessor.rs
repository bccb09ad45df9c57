//! The processor: an oriented RGB image in, the encoders' inputs out.

use std::num::NonZeroU32;

use crate::{
    BudgetError, Error, Limits, Patches, PixelValues, ProcessorConfig, Result, RgbImage, SettingsFile, resize_bicubic,
    target_size,
};

/// The reference's image processor steps after loading: budget resize, rescale/normalise, and
/// the layout each encoder consumes. Cheap to build; holds only the settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Preprocessor {
    config: ProcessorConfig,
    /// `config.patch_size` and `config.pooling_kernel_size`, checked positive.
    patch_size: NonZeroU32,
    pooling_kernel_size: NonZeroU32,
    /// `config.max_patches()`, which the pixel bound keeps below `u32::MAX`.
    max_patches: u32,
}

/// The gemma4_unified encoder's input for one image.
#[derive(Debug, Clone, PartialEq)]
pub struct UnifiedInput {
    /// `pixel_values`: float32 `[max_soft_tokens, 6912]` 48x48 model patches and their
    /// `image_position_ids` int64 `[max_soft_tokens, 2]` `(x = column, y = row)`, padded with
    /// zero rows at `(-1, -1)`.
    pub patches: Patches,
    /// `num_soft_tokens_per_image`: the number of model patches of the resized image
    /// (`(H / 48) * (W / 48)`), i.e. the real rows.
    pub soft_tokens: usize,
}

impl Preprocessor {
    /// A processor with these settings (budget included; see
    /// [`ProcessorConfig::with_max_soft_tokens`]).
    ///
    /// The one check of the settings: fails on a zero `patch_size` or `pooling_kernel_size`,
    /// or an `image_mean` / `image_std` of other than 3 values, and with
    /// [`BudgetError::Pixels`] on a budget whose resized
    /// images could exceed [`Limits::PILLOW_BOMB_PIXELS`]: a resized image has at most
    /// `max_soft_tokens · pool² · patch²` pixels, and every buffer the pipeline allocates (the
    /// resized image, the float32 pixels, the unified encoder's padded patches) is proportional
    /// to that bound, so it is checked here, before anything is allocated.
    pub fn new(config: ProcessorConfig) -> Result<Self> {
        let config = config.validated().map_err(|detail| Error::invalid("processor config", detail))?;
        Self::bounded(config)
    }

    /// The image processor of a checkpoint directory ([`SettingsFile::find`]), as
    /// [`from_settings_file`](Self::from_settings_file) makes it.
    pub fn from_checkpoint_dir(dir: impl AsRef<std::path::Path>, layout: crate::SettingsLayout) -> Result<Self> {
        Self::from_settings_file(SettingsFile::find(dir)?.as_ref(), layout)
    }

    /// The image processor of a checkpoint's settings file (the defaults without one): its
    /// settings as [`ProcessorConfig::from_settings_file`] reads them, checked as
    /// [`new`](Self::new) checks them; a refusal is an [`Error::Config`] naming the file.
    pub fn from_settings_file(file: Option<&SettingsFile>, layout: crate::SettingsLayout) -> Result<Self> {
        let config = ProcessorConfig::from_settings_file(file, layout)?;
        Self::new(config).map_err(|e| match file {
            Some(file) => file.refusal(e),
            None => e,
        })
    }

    /// The same settings with the caller's budget, if any (see
    /// [`ProcessorConfig::with_max_soft_tokens`]): only the budget's bound is checked again, as
    /// [`new`](Self::new) checks it.
    pub fn with_budget(&self, budget: Option<crate::SoftTokenBudget>) -> Result<Self> {
        match budget {
            None => Ok(self.clone()),
            budget => Self::bounded(self.config.clone().with_max_soft_tokens(budget)),
        }
    }

    /// `config` (checked) if its budget's resized images stay within the pixel bound.
    fn bounded(config: ProcessorConfig) -> Result<Self> {
        let patch = u128::from(config.patch_size);
        let max_pixels = u128::from(config.max_patches()) * patch * patch;
        if max_pixels > u128::from(Limits::PILLOW_BOMB_PIXELS) {
            return Err(BudgetError::Pixels {
                budget: config.max_soft_tokens.get(),
                pixels: max_pixels,
                patches: config.max_patches(),
                patch_size: config.patch_size,
                limit: Limits::PILLOW_BOMB_PIXELS,
            }
            .into());
        }
        // The pixel bound (< u32::MAX, with patches of at least one pixel) bounds the patches.
        let max_patches = u32::try_from(config.max_patches())
            .map_err(|_| Error::invalid("processor config", "the patch budget does not fit in 32 bits"))?;
        let positive = |value: u32| {
            NonZeroU32::new(value).ok_or_else(|| Error::invalid("processor config", "a zero patch or pooling size"))
        };
        let (patch_size, pooling_kernel_size) = (positive(config.patch_size)?, positive(config.pooling_kernel_size)?);
        Ok(Preprocessor { config, patch_size, pooling_kernel_size, max_patches })
    }

    /// The settings.
    pub fn config(&self) -> &ProcessorConfig {
        &self.config
    }

    /// The side of a patch in pixels.
    pub fn patch_size(&self) -> NonZeroU32 {
        self.patch_size
    }

    /// The side of a pooling window in patches.
    pub fn pooling_kernel_size(&self) -> NonZeroU32 {
        self.pooling_kernel_size
    }

    /// `(height, width)` the image is resized to: [`target_size`] with
    /// `max_patches = max_soft_tokens * pool^2`.
    pub fn target_size(&self, height: u32, width: u32) -> Result<(u32, u32)> {
        let c = &self.config;
        target_size(height, width, c.patch_size, self.max_patches(), c.pooling_kernel_size)
    }

    /// `aspect_ratio_preserving_resize`: the image unchanged when it already has the target
    /// size (or `do_resize` is false), else Pillow's bicubic resize to it.
    pub fn resize(&self, image: &RgbImage) -> Result<RgbImage> {
        if !self.config.do_resize {
            return Ok(image.clone());
        }
        let (th, tw) = self.target_size(image.height(), image.width())?;
        resize_bicubic(image, tw, th)
    }

    /// The gemma4 encoder's `pixel_values` for one image (`Gemma4ImageProcessor.preprocess`):
    /// resize, rescale, CHW; with its soft-token count.
    pub fn gemma4_image(&self, image: &RgbImage) -> Result<PixelValues> {
        let resized = self.resize(image)?;
        Ok(PixelValues::from_image(&resized, self))
    }

    /// The gemma4_unified encoder's input for one image
    /// (`Gemma4UnifiedImageProcessor.preprocess`): resize, rescale, 48x48 model patches padded
    /// to `max_soft_tokens` rows.
    pub fn gemma4_unified_image(&self, image: &RgbImage) -> Result<UnifiedInput> {
        let resized = self.resize(image)?;
        let patch = self.config.model_patch_size() as usize;
        let patches = Patches::from_image(&resized, patch, self.config.max_soft_tokens.get() as usize, &self.config)?;
        let soft_tokens = patches.grid.0 * patches.grid.1;
        Ok(UnifiedInput { patches, soft_tokens })
    }

    /// The gemma4 padded path's input for an image of the right size already (both sides
    /// multiples of `patch_size`): `patch_size` patches padded or truncated to `len` rows.
    pub fn padded_patches(&self, image: &RgbImage, len: usize) -> Result<Patches> {
        Patches::from_image(image, self.config.patch_size as usize, len, &self.config)
    }

    /// One video frame the way `Gemma4VideoProcessor` treats it with this processor's budget
    /// (its default is 70): resized with [`video_frame_size`](crate::video_frame_size),
    /// rescaled, cut into `patch_size` patches padded to `max_soft_tokens * pool^2` rows. The
    /// frame's soft tokens are `min(real, rows) // pool^2`.
    pub fn gemma4_video_frame(&self, frame: &RgbImage) -> Result<Patches> {
        let resized = self.resize_video_frame(frame)?;
        self.padded_patches(&resized, self.max_patches() as usize)
    }

    /// `Gemma4VideoProcessor._resize_frames` on one frame: Pillow's bicubic resize to
    /// [`video_frame_size`](crate::video_frame_size) (the frame unchanged when it has that size
    /// already, or when `do_resize` is false).
    pub(crate) fn resize_video_frame(&self, frame: &RgbImage) -> Result<RgbImage> {
        let c = &self.config;
        if !c.do_resize {
            return Ok(frame.clone());
        }
        let (th, tw) = crate::video_frame_size(
            frame.height(),
            frame.width(),
            c.patch_size,
            self.max_patches(),
            c.pooling_kernel_size,
        )?;
        resize_bicubic(frame, tw, th)
    }

    /// `max_soft_tokens · pooling_kernel_size²`, the patch budget of the size formula: the most
    /// patches of a resized image (and the padded rows of a video frame).
    pub fn max_patches(&self) -> u32 {
        self.max_patches
    }
}
