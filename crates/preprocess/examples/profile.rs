//! Runs one stage of the pipeline on a file many times, for `perf stat` / `perf record`.
//!
//! `cargo run --release -p gemma-vision-preprocess --example profile -- <file> <budget> <iterations> [pipeline|decode|resize]`

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, Preprocessor, ProcessorConfig, decode, resize_bicubic};
use std::hint::black_box;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, budget, iterations, rest @ ..] = args.as_slice() else {
        return Err("usage: profile <file> <budget> <iterations> [pipeline|decode|resize]".into());
    };
    let stage = rest.first().map_or("pipeline", String::as_str);
    let bytes = std::fs::read(file)?;
    let options = DecodeOptions::default();
    let processor = Preprocessor::new(ProcessorConfig::default().with_max_soft_tokens(Some(budget.parse()?)))?;
    let image = decode(&bytes, &options)?;
    let (th, tw) = processor.target_size(image.height(), image.width())?;
    let start = std::time::Instant::now();
    let iterations: usize = iterations.parse()?;
    for _ in 0..iterations {
        match stage {
            "decode" => drop(black_box(decode(black_box(&bytes), &options)?)),
            "resize" => drop(black_box(resize_bicubic(black_box(&image), tw, th)?)),
            _ => {
                let image = decode(black_box(&bytes), &options)?;
                drop(black_box(processor.gemma4_unified_image(&image)?));
            }
        }
    }
    let per = start.elapsed().as_secs_f64() * 1e3 / iterations as f64;
    eprintln!("{stage} {}x{} -> {tw}x{th}: {per:.2} ms per iteration", image.width(), image.height());
    Ok(())
}
