//! `gemma-vision encode`: the soft tokens of image files, or of one video's frames, into one safetensors file.

use crate::args::{self, ModelArgs};
use clap::{ArgGroup, Args};
use std::path::PathBuf;
use tensor::Array;
use vision::{ComputeDtype, EncoderOptions, VisionEncoder};

/// Encode image files, or the frames of one video, into one safetensors file.
///
/// Writes `features` ([Σ soft tokens, text_hidden], in the encoder's dtype) and `soft_tokens`
/// (int32, one per image, or per kept frame).
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("inputs").required(true).args(["images", "frames"])))]
pub struct EncodeArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// An image file (JPEG, PNG, GIF, WebP, BMP, TIFF); repeat for several, encoded in order.
    #[arg(long = "image", value_name = "FILE")]
    images: Vec<PathBuf>,
    /// The frames of one video, in order: image files of one size, encoded as mlx-vlm's video
    /// processor and video path encode a video (at most its num_frames, 32 by default, sampled
    /// uniformly). --max-soft-tokens is then the budget per frame: 70, 140, 280, 560 or 1120
    /// [default: processor_config.json's video_processor, else 70].
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with = "images")]
    frames: Vec<PathBuf>,
    /// The dtype to compute in: native (the checkpoint's own, bf16 for published checkpoints)
    /// or f32 (weights cast to float32 once at load).
    #[arg(long, value_name = "native|f32", default_value = "native", value_parser = args::compute_dtype)]
    dtype: ComputeDtype,
    /// Divide the features by √text_hidden, for a language model that scales every input
    /// embedding (mlx-vlm does not).
    #[arg(long)]
    divide_by_embed_scale: bool,
    /// The output file.
    #[arg(long, value_name = "FILE.safetensors")]
    out: PathBuf,
}

pub fn run(args: &EncodeArgs) -> Result<(), crate::Error> {
    // A command runs alone in its process: keep MLX's freed intermediates mapped for reuse.
    tensor::memory::retain_freed_host_memory();
    let options = EncoderOptions {
        compute_dtype: args.dtype,
        divide_by_embed_scale: args.divide_by_embed_scale,
        ..EncoderOptions::default()
    };
    let encoder = VisionEncoder::load(&args.model.model, options)?;
    let budget = args.model.max_soft_tokens;
    let features = match args.frames.is_empty() {
        true => encoder.encode_files(&args.images, budget)?,
        false => {
            let video = encoder.video_preprocessor(budget)?;
            let frames = args
                .frames
                .iter()
                .map(|path| preprocess::open(path, &encoder.options().limits).map_err(vision::Error::from))
                .collect::<vision::Result<Vec<_>>>()?;
            encoder.encode(&encoder.prepare_video(&frames, &video)?)?
        }
    };
    let counts: Vec<i32> = features.soft_tokens.iter().map(|&n| n as i32).collect();
    let soft_tokens = Array::from_slice(&counts, &[counts.len() as i32])?;
    Ok(tensor::save_safetensors(&args.out, &[("features", &features.features), ("soft_tokens", &soft_tokens)], None)?)
}
