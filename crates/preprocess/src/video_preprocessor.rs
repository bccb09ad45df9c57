//! [`VideoPreprocessor`]: the frames of one video in, the encoders' per-frame inputs out.

use crate::{Error, Patches, Preprocessor, Result, RgbImage, VideoProcessorConfig};

/// The video processors' steps (mlx-vlm `Gemma4VideoProcessor`, `Gemma4UnifiedVideoProcessor`)
/// for the frames of one video, with validated settings. Cheap to build; holds only them.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoPreprocessor {
    config: VideoProcessorConfig,
    frame: Preprocessor,
}

impl VideoPreprocessor {
    /// A processor with these settings, checked once: a budget per frame among
    /// [`VIDEO_BUDGETS`](crate::VIDEO_BUDGETS) ([`BudgetError::NotAVideoBudget`](crate::BudgetError::NotAVideoBudget)),
    /// at least one frame, and the frame settings as [`Preprocessor::new`] checks them.
    pub fn new(config: VideoProcessorConfig) -> Result<Self> {
        config.check_video_settings()?;
        let frame = Preprocessor::new(config.frame.clone())?;
        let config = VideoProcessorConfig { frame: frame.config().clone(), ..config };
        Ok(VideoPreprocessor { config, frame })
    }

    /// The settings.
    pub fn config(&self) -> &VideoProcessorConfig {
        &self.config
    }

    /// The processor of one frame: the frame settings, checked.
    pub fn frame_preprocessor(&self) -> &Preprocessor {
        &self.frame
    }

    /// The frames kept of `frames`, in order (see [`VideoProcessorConfig::sampled_frames`]),
    /// after checking that they have one size, as the frames of a `(T, C, H, W)` video do.
    pub fn sample<'a>(&self, frames: &'a [RgbImage]) -> Result<Vec<&'a RgbImage>> {
        let first = frames.first().ok_or_else(|| Error::invalid("video", "no frames"))?;
        let size = (first.width(), first.height());
        if let Some((i, other)) = frames.iter().enumerate().find(|(_, f)| (f.width(), f.height()) != size) {
            return Err(Error::invalid(
                "video",
                format!(
                    "the frames of a video share one size: frame 0 is {}x{}, frame {i} is {}x{}",
                    size.0,
                    size.1,
                    other.width(),
                    other.height()
                ),
            ));
        }
        Ok(self.config.sampled_frames(frames.len()).into_iter().map(|i| &frames[i]).collect())
    }

    /// gemma4: one frame as `Gemma4VideoProcessor` makes it: resized to the video size of the
    /// budget, rescaled, cut into `patch_size` patches `[L, 3·patch²]` padded to
    /// `max_soft_tokens · pool²` rows. The frame's soft tokens are `min(real, L) / pool²`.
    pub fn gemma4_frame(&self, frame: &RgbImage) -> Result<Patches> {
        self.frame.gemma4_video_frame(frame)
    }

    /// gemma4_unified: one frame as `Gemma4UnifiedVideoProcessor` makes it: resized as for
    /// gemma4, rescaled, cut into `model_patch_size` patches padded to `max_soft_tokens` rows.
    /// Its soft tokens are its real rows.
    pub fn gemma4_unified_frame(&self, frame: &RgbImage) -> Result<Patches> {
        let resized = self.frame.resize_video_frame(frame)?;
        let c = &self.config;
        Patches::from_image(&resized, c.model_patch_size as usize, c.frame.max_soft_tokens.get() as usize, &c.frame)
    }
}
