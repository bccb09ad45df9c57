//! Image bytes to the inputs of the Gemma 4 vision encoders, on the CPU, byte-identical to the
//! reference's path (mlx-vlm 0.7.10's processors on Pillow 13).
//!
//! The stages, each in its own module:
//! 1. [`decode`] / [`open`]: bytes or a file to an [`RgbImage`] (RGB8, HWC), as `Image.open` +
//!    `ImageOps.exif_transpose` + `.convert("RGB")`, with [`Limits`] checked from the header.
//! 2. [`target_size`]: `get_aspect_ratio_preserving_size`, to the double.
//! 3. [`resize_bicubic`]: Pillow's `Image.resize(size, BICUBIC)`, byte for byte.
//! 4. [`PixelValues`] (gemma4: f32 `[3, H, W]`), [`Patches`] (gemma4 padded path: 16x16
//!    patches `[L, 768]`; gemma4_unified: 48x48 patches `[N, 6912]`), with positions and
//!    soft-token counts.
//!
//! [`Preprocessor`] runs 2–4 with a [`ProcessorConfig`] read from a checkpoint;
//! [`VideoPreprocessor`] samples a video's frames and runs them with a
//! [`VideoProcessorConfig`] (the video processors' settings). Nothing here
//! depends on MLX: outputs are plain `Vec<f32>` / `Vec<i64>` with documented shapes.
//!
//! # Example
//!
//! A 64×48 image prepared as mlx-vlm's `Gemma4ImageProcessor` prepares it at the default
//! budget (280 soft tokens): resized to whole 48-pixel cells (16-pixel patches pooled 3×3),
//! rescaled to `[0, 1]`, channels first:
//!
//! ```
//! use gemma_vision_preprocess::{Preprocessor, ProcessorConfig, RgbImage};
//!
//! let image = RgbImage::new(64, 48, vec![128; 64 * 48 * 3])?;
//! let preprocessor = Preprocessor::new(ProcessorConfig::default())?;
//! let pixels = preprocessor.gemma4_image(&image)?;
//! assert_eq!((pixels.height % 48, pixels.width % 48), (0, 0));
//! assert_eq!(pixels.soft_tokens, (pixels.height / 48) * (pixels.width / 48));
//! assert!(pixels.soft_tokens <= 280);
//! assert_eq!(pixels.data.len(), 3 * pixels.height * pixels.width);
//! assert!(pixels.data.iter().all(|&v| (v - 128.0 / 255.0).abs() < 1e-6));
//! # Ok::<(), gemma_vision_preprocess::Error>(())
//! ```
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod budget;
mod buffer_pool;
mod config;
mod decode;
mod error;
mod limits;
mod orientation;
mod patches;
mod pixel_values;
mod preprocessor;
mod rescale;
pub mod resize;
mod rgb_image;
mod settings_file;
mod settings_layout;
mod target_size;
mod video_config;
mod video_preprocessor;

pub use budget::{BudgetError, SoftTokenBudget};
pub use config::{BudgetSource, ProcessorConfig};
pub use decode::{DecodeOptions, Format, decode, open};
pub use error::{Error, Result};
pub use limits::Limits;
pub use orientation::Orientation;
pub use patches::Patches;
pub use pixel_values::PixelValues;
pub use preprocessor::{Preprocessor, UnifiedInput};
pub use rescale::RescaleTable;
pub use resize::resize_bicubic;
pub use rgb_image::RgbImage;
pub use settings_file::SettingsFile;
pub use settings_layout::SettingsLayout;
pub use target_size::{TargetSize, target_size, video_frame_size};
pub use video_config::{VIDEO_BUDGETS, VideoProcessorConfig};
pub use video_preprocessor::VideoPreprocessor;
