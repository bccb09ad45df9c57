//! `gemma-vision preprocess`: what the encoder would consume for one image.

use crate::args::ModelArgs;
use clap::Args;
use std::path::PathBuf;
use tensor::Array;
use vision::{EncoderOptions, PreparedImage, VisionEncoder};

/// Preprocess one image as the encoder would, into a safetensors file.
///
/// Writes `pixels` (the resized RGB image, uint8 [H, W, 3]) and
/// `pixel_values` (float32 [3, H, W] for gemma4; [max_soft_tokens, 6912] padded patches for
/// gemma4_unified, with `patches`, the real rows, and `positions`, int64 [max_soft_tokens, 2]).
#[derive(Debug, Args)]
pub struct PreprocessArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The image file.
    #[arg(long, value_name = "FILE")]
    image: PathBuf,
    /// The output file.
    #[arg(long, value_name = "FILE.safetensors")]
    out: PathBuf,
}

pub fn run(args: &PreprocessArgs) -> Result<(), crate::Error> {
    let encoder = VisionEncoder::load(&args.model.model, EncoderOptions::default())?;
    let image = preprocess::open(&args.image, &encoder.options().limits)?;
    let preprocessor = encoder.preprocessor(args.model.max_soft_tokens)?;
    let resized = preprocessor.resize(&image)?;
    let (h, w) = (resized.height() as i32, resized.width() as i32);
    let mut tensors: Vec<(&str, Array)> = vec![("pixels", Array::from_slice(resized.data(), &[h, w, 3])?)];
    match encoder.prepare(&image, &preprocessor)? {
        PreparedImage::Pixels(p) => {
            let values = Array::from_slice(&p.data, &[3, p.height as i32, p.width as i32])?;
            tensors.push(("pixel_values", values));
        }
        PreparedImage::Patches(p) => {
            let (len, dim) = (p.len as i32, p.dim as i32);
            let padded = Array::from_slice(&p.data, &[len, dim])?;
            let real = padded.slice_axis(0, 0, p.real as i32)?;
            tensors.push(("pixel_values", padded));
            tensors.push(("patches", real));
            tensors.push(("positions", Array::from_slice(&p.positions, &[len, 2])?));
        }
    }
    let refs: Vec<(&str, &Array)> = tensors.iter().map(|(n, a)| (*n, a)).collect();
    Ok(tensor::save_safetensors(&args.out, &refs, None)?)
}
