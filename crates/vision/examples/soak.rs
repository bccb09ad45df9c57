//! `cargo xtask soak`: encodes the same images over and over and prints MLX's active memory and
//! the process's resident set size, to show that neither grows.
//!
//! `soak MODEL_DIR IMAGE [IMAGE…] [--iterations N]`

extern crate gemma_vision_encoder as vision;

use vision::{EncoderOptions, VisionEncoder};

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut iterations = 5000usize;
    if let Some(at) = args.iter().position(|a| a == "--iterations") {
        iterations = args.get(at + 1).ok_or("--iterations needs a value")?.parse()?;
        args.drain(at..at + 2);
    }
    let [model, images @ ..] = args.as_slice() else {
        return Err("usage: soak MODEL_DIR IMAGE [IMAGE…] [--iterations N]".into());
    };
    if images.is_empty() {
        return Err("give at least one image".into());
    }
    let encoder = VisionEncoder::load(model, EncoderOptions::default())?;
    let started = std::time::Instant::now();
    let mut first = None;
    println!("{:>10} {:>14} {:>14} {:>10}", "iteration", "MLX active", "RSS", "seconds");
    for i in 1..=iterations {
        let out = encoder.encode_files(images, None)?;
        out.features.eval()?;
        drop(out);
        if i == 10 || i % (iterations / 10).max(1) == 0 {
            let (active, rss) = (tensor::memory::active_memory()?, resident_bytes());
            first.get_or_insert((active, rss));
            println!("{i:>10} {active:>14} {rss:>14} {:>10.1}", started.elapsed().as_secs_f64());
        }
    }
    if let Some((active, rss)) = first {
        let (end_active, end_rss) = (tensor::memory::active_memory()?, resident_bytes());
        println!(
            "after iteration 10 → {iterations}: MLX active {:+} bytes, RSS {:+} KiB",
            end_active as i64 - active as i64,
            (end_rss as i64 - rss as i64) / 1024
        );
    }
    Ok(())
}
