//! `gemma-vision`: Gemma 4 vision features from the command line.
//!
//! ```text
//! gemma-vision encode --model DIR --image FILE [--image FILE]... [--max-soft-tokens N]
//!                     [--dtype native|f32] [--divide-by-embed-scale] --out FILE.safetensors
//! gemma-vision preprocess --model DIR --image FILE [--max-soft-tokens N] --out FILE.safetensors
//! ```
//!
//! `encode` writes `features` (`[Σ soft tokens, text_hidden]`, the encoder's dtype) and
//! `soft_tokens` (int32, one per image). `preprocess` writes `pixels` (the resized RGB image,
//! uint8 `[H, W, 3]`) and `pixel_values` (what the encoder consumes: float32 `[3, H, W]` for
//! gemma4, `[max_soft_tokens, 6912]` padded patches for gemma4_unified), and for gemma4_unified
//! also `patches` (the real rows) and `positions` (int64 `[max_soft_tokens, 2]`).
//! The budget is `--max-soft-tokens`, else the checkpoint's `processor_config.json`, else 280.
//! On any error: exit status 2, one line `error: …` on stderr, and no output file.

use std::path::PathBuf;
use std::process::ExitCode;
use tensor::Array;
use vision::{ComputeDtype, EncoderOptions, VisionEncoder};

const USAGE: &str = "usage:
  gemma-vision encode --model DIR --image FILE [--image FILE]... [--max-soft-tokens N] [--dtype native|f32] [--divide-by-embed-scale] --out FILE.safetensors
  gemma-vision preprocess --model DIR --image FILE [--max-soft-tokens N] --out FILE.safetensors";

#[derive(Debug, Default)]
struct Args {
    model: Option<PathBuf>,
    images: Vec<PathBuf>,
    budget: Option<u32>,
    dtype: ComputeDtype,
    divide_by_embed_scale: bool,
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = match argv.split_first() {
        Some((command, rest)) if command == "encode" => parse(rest).and_then(|args| encode(&args)),
        Some((command, rest)) if command == "preprocess" => parse(rest).and_then(|args| preprocess(&args)),
        Some((flag, _)) if flag == "--help" || flag == "-h" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => Err(format!("expected a command\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {}", message.lines().next().unwrap_or_default());
            ExitCode::from(2)
        }
    }
}

fn parse(argv: &[String]) -> Result<Args, String> {
    let mut args = Args::default();
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--model" => args.model = Some(value()?.into()),
            "--image" => args.images.push(value()?.into()),
            "--out" => args.out = Some(value()?.into()),
            "--max-soft-tokens" => {
                let text = value()?;
                let budget: u32 =
                    text.parse().map_err(|_| format!("--max-soft-tokens: `{text}` is not a positive integer"))?;
                if budget == 0 {
                    return Err("--max-soft-tokens must be positive".into());
                }
                args.budget = Some(budget);
            }
            "--dtype" => {
                args.dtype = match value()?.as_str() {
                    "native" => ComputeDtype::Native,
                    "f32" | "float32" => ComputeDtype::F32,
                    other => return Err(format!("--dtype: `{other}` is not native or f32")),
                }
            }
            "--divide-by-embed-scale" => args.divide_by_embed_scale = true,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if args.model.is_none() {
        return Err("--model DIR is required".into());
    }
    if args.images.is_empty() {
        return Err("--image FILE is required".into());
    }
    if args.out.is_none() {
        return Err("--out FILE is required".into());
    }
    Ok(args)
}

fn load(args: &Args) -> Result<VisionEncoder, String> {
    let options = EncoderOptions {
        compute_dtype: args.dtype,
        divide_by_embed_scale: args.divide_by_embed_scale,
        ..EncoderOptions::default()
    };
    VisionEncoder::load(args.model.as_deref().unwrap_or_else(|| "".as_ref()), options).map_err(|e| e.to_string())
}

fn out_path(args: &Args) -> Result<&std::path::Path, String> {
    args.out.as_deref().ok_or_else(|| "--out FILE is required".to_owned())
}

fn encode(args: &Args) -> Result<(), String> {
    // A command runs alone in its process: keep MLX's freed intermediates mapped for reuse.
    tensor::memory::retain_freed_host_memory();
    let encoder = load(args)?;
    let features = encoder.encode_files(&args.images, args.budget).map_err(|e| e.to_string())?;
    let counts: Vec<i32> = features.soft_tokens.iter().map(|&n| n as i32).collect();
    let soft_tokens = Array::from_slice(&counts, &[counts.len() as i32]).map_err(|e| e.to_string())?;
    tensor::save_safetensors(out_path(args)?, &[("features", &features.features), ("soft_tokens", &soft_tokens)], None)
        .map_err(|e| e.to_string())
}

fn preprocess(args: &Args) -> Result<(), String> {
    let [image_path] = args.images.as_slice() else {
        return Err("preprocess takes exactly one --image".into());
    };
    let encoder = load(args)?;
    let image = preprocess::open(image_path, &encoder.options().limits).map_err(|e| e.to_string())?;
    let preprocessor = encoder.preprocessor(args.budget).map_err(|e| e.to_string())?;
    let resized = preprocessor.resize(&image).map_err(|e| e.to_string())?;
    let (h, w) = (resized.height() as i32, resized.width() as i32);
    let pixels = Array::from_slice(resized.data(), &[h, w, 3]).map_err(|e| e.to_string())?;
    let mut tensors: Vec<(&str, Array)> = vec![("pixels", pixels)];
    let prepared = encoder.prepare(&image, &preprocessor).map_err(|e| e.to_string())?;
    let to_string = |e: tensor::Error| e.to_string();
    match prepared {
        vision::PreparedImage::Pixels(p) => {
            tensors.push((
                "pixel_values",
                Array::from_slice(&p.data, &[3, p.height as i32, p.width as i32]).map_err(to_string)?,
            ));
        }
        vision::PreparedImage::Patches(p) => {
            let (len, dim) = (p.len as i32, p.dim as i32);
            let padded = Array::from_slice(&p.data, &[len, dim]).map_err(to_string)?;
            let real = padded.slice_axis(0, 0, p.real as i32).map_err(to_string)?;
            tensors.push(("pixel_values", padded));
            tensors.push(("patches", real));
            tensors.push(("positions", Array::from_slice(&p.positions, &[len, 2]).map_err(to_string)?));
        }
    }
    let refs: Vec<(&str, &Array)> = tensors.iter().map(|(n, a)| (*n, a)).collect();
    tensor::save_safetensors(out_path(args)?, &refs, None).map_err(|e| e.to_string())
}
