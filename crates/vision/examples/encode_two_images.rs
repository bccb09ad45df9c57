//! Library use: load an encoder from a model directory, encode two images, print shapes.
//!
//! `cargo run --release -p gemma-vision-encoder --example encode_two_images -- MODEL_DIR IMAGE IMAGE`

extern crate gemma_vision_encoder as vision;

use vision::{EncoderOptions, VisionEncoder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, first, second] = args.as_slice() else {
        return Err("usage: encode_two_images MODEL_DIR IMAGE IMAGE".into());
    };
    let encoder = VisionEncoder::load(model, EncoderOptions::default())?;
    let out = encoder.encode_files(&[first, second], None)?;
    println!("model type   {:?}", encoder.config().model_type);
    println!("features     {:?} {}", out.features.shape(), out.features.dtype());
    println!("soft tokens  {:?}", out.soft_tokens);
    Ok(())
}
