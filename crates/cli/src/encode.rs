//! `gemma-vision encode`: the soft tokens of image files into one safetensors file.

use crate::args::{self, ModelArgs};
use clap::Args;
use std::path::PathBuf;
use tensor::Array;
use vision::{ComputeDtype, EncoderOptions, VisionEncoder};

/// Encode image files into one safetensors file.
///
/// Writes `features` ([Σ soft tokens, text_hidden], in the encoder's dtype) and `soft_tokens`
/// (int32, one per image).
#[derive(Debug, Args)]
pub struct EncodeArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// An image file (JPEG, PNG, GIF, WebP, BMP, TIFF); repeat for several, encoded in order.
    #[arg(long = "image", value_name = "FILE", required = true)]
    images: Vec<PathBuf>,
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
    let features = encoder.encode_files(&args.images, args.model.max_soft_tokens)?;
    let counts: Vec<i32> = features.soft_tokens.iter().map(|&n| n as i32).collect();
    let soft_tokens = Array::from_slice(&counts, &[counts.len() as i32])?;
    Ok(tensor::save_safetensors(&args.out, &[("features", &features.features), ("soft_tokens", &soft_tokens)], None)?)
}
