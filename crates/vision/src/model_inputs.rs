//! [`ModelInputs`]: the pixel inputs of mlx-vlm's Gemma 4 models as its processors make them,
//! and [`MlxVlmModel::encode_model_inputs`](crate::MlxVlmModel::encode_model_inputs), which encodes them as the models do (each
//! family's module under `family/` says how).

use crate::{Error, Features, Result, VisionEncoder};
use tensor::{Array, Dtype};

/// The pixel inputs of one call of a Gemma 4 model's vision path in mlx-vlm (`pixel_values` or
/// `pixel_values_videos`, with their position ids), as its processors make them. The
/// constructors check ranks, dtypes and that position ids match their patches;
/// [`MlxVlmModel::encode_model_inputs`](crate::MlxVlmModel::encode_model_inputs) checks what each family takes beyond that.
#[derive(Debug, Clone)]
pub enum ModelInputs {
    /// gemma4's image path: `[B, 3, H, W]` float32 pixels, images of one size
    /// (`Gemma4ImageProcessor`'s stacked `pixel_values`).
    Pixels(Array),
    /// gemma4: images of different sizes, each `[3, H, W]` or `[B, 3, H, W]` float32, encoded
    /// one by one and concatenated (the list `Gemma4ImageProcessor` returns for them).
    PixelList(Vec<Array>),
    /// Patch rows, float32, with integer position ids `(x, y)` (`(-1, -1)` for padding):
    /// - gemma4's position-id path: `[B, L, 3·p²]`, or video frames `[B, T, L, 3·p²]`
    ///   (`Gemma4VideoProcessor`), with ids `[B, L, 2]` / `[B, T, L, 2]`;
    /// - gemma4_unified: `[B, N, 3·P²]` model patches, or video frames `[V, T, N, 3·P²]`
    ///   flattened to `V·T` frames as `get_video_features` does, with ids of the same leading
    ///   extents; or without ids (`get_image_features(pixel_values)`, as mlx-vlm's vision cache
    ///   calls it): no position term, every row kept.
    Patches { patches: Array, positions: Option<Array> },
    /// gemma4: the videos of one call when their frame counts differ (the list
    /// `Gemma4VideoProcessor` returns), each patch rows `[T, L, 3·p²]` with ids `[T, L, 2]`.
    PatchList(Vec<(Array, Array)>),
}

impl ModelInputs {
    /// gemma4 pixels `[B, 3, H, W]` float32.
    pub fn pixels(pixels: Array) -> Result<ModelInputs> {
        check_pixels("pixel_values", &pixels, &[4])?;
        Ok(ModelInputs::Pixels(pixels))
    }

    /// gemma4 images of different sizes, each `[3, H, W]` (given a leading axis) or
    /// `[B, 3, H, W]` float32; at least one.
    pub fn pixel_list(images: Vec<Array>) -> Result<ModelInputs> {
        if images.is_empty() {
            return Err(model_input("pixel_values", "at least one image", "an empty list".into()));
        }
        let images = images
            .into_iter()
            .map(|image| {
                check_pixels("pixel_values[i]", &image, &[3, 4])?;
                Ok(if image.ndim() == 3 { image.expand_dims(0)? } else { image })
            })
            .collect::<Result<_>>()?;
        Ok(ModelInputs::PixelList(images))
    }

    /// Patch rows `[B, L, D]` or `[B, T, L, D]` float32 with, if any, integer position ids of
    /// the same leading extents and a last extent of 2.
    pub fn patches(patches: Array, positions: Option<Array>) -> Result<ModelInputs> {
        check_patches(&patches, positions.as_ref())?;
        Ok(ModelInputs::Patches { patches, positions })
    }

    /// Several videos' patch rows with their position ids (see [`patches`](Self::patches));
    /// at least one.
    pub fn patch_list(videos: Vec<(Array, Array)>) -> Result<ModelInputs> {
        if videos.is_empty() {
            return Err(model_input("pixel_values_videos", "at least one video", "an empty list".into()));
        }
        for (patches, positions) in &videos {
            check_patches(patches, Some(positions))?;
        }
        Ok(ModelInputs::PatchList(videos))
    }
}

fn model_input(input: &'static str, expected: &str, found: String) -> Error {
    Error::ModelInput { input, expected: expected.to_owned(), found }
}

fn check_pixels(input: &'static str, pixels: &Array, ranks: &[usize]) -> Result<()> {
    let shape = pixels.shape();
    if !ranks.contains(&shape.len()) || shape[shape.len().saturating_sub(3)] != 3 {
        let expected = if ranks.len() == 1 { "[B, 3, H, W]" } else { "[3, H, W] or [B, 3, H, W]" };
        return Err(model_input(input, expected, format!("{shape:?}")));
    }
    if pixels.dtype() != Dtype::F32 {
        return Err(model_input(input, "float32", pixels.dtype().to_string()));
    }
    Ok(())
}

fn check_patches(patches: &Array, positions: Option<&Array>) -> Result<()> {
    let shape = patches.shape();
    if !(3..=4).contains(&shape.len()) {
        return Err(model_input("patches", "[B, L, D] or [B, T, L, D]", format!("{shape:?}")));
    }
    if patches.dtype() != Dtype::F32 {
        return Err(model_input("patches", "float32", patches.dtype().to_string()));
    }
    let Some(positions) = positions else { return Ok(()) };
    let ids = positions.shape();
    let leading = &shape[..shape.len() - 1];
    if ids.len() != shape.len() || &ids[..ids.len() - 1] != leading || ids[ids.len() - 1] != 2 {
        let expected = format!("{:?} (the patches' leading extents, then 2)", [leading, &[2]].concat());
        return Err(Error::ModelInput { input: "position ids", expected, found: format!("{ids:?}") });
    }
    if !matches!(positions.dtype(), Dtype::I32 | Dtype::I64) {
        return Err(model_input("position ids", "int32 or int64", positions.dtype().to_string()));
    }
    Ok(())
}

/// [`MlxVlmModel::encode_model_inputs`](crate::MlxVlmModel::encode_model_inputs).
pub(crate) fn encode_model_inputs(encoder: &VisionEncoder, inputs: &ModelInputs) -> Result<Features> {
    let (features, soft_tokens) = encoder.model().encode_model_inputs(inputs)?;
    let features = encoder.scaled_features(features)?;
    Ok(Features { features, soft_tokens })
}
