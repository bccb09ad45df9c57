//! candle-transformers 0.11.1's Gemma 4 vision path (`models::gemma4::vision::VisionTower` and
//! `multimodal_embedding::MultimodalEmbedder`), float32 on the CPU, timed bytes → features on
//! a checkpoint in the published layout, for `cargo xtask bench e2e`.
//!
//! ```text
//! candle-gemma4-bench --model DIR --image FILE [--image FILE]... [--budget N] [--runs N] [--out FILE]
//! ```
//!
//! Loading (timed as `load_seconds`): the vision tensors of `model.safetensors` or of the shards
//! of `model.safetensors.index.json`, renamed to candle's keys (the `model.` prefix and mlx-vlm's
//! `ClippableLinear` `.linear` level dropped) and converted to float32. candle's Gemma RMSNorm
//! multiplies by `1 + weight` where mlx-vlm's gemma4 vision norms (`RMSNorm`, `VisionRMSNorm`)
//! multiply by `weight`, so every `*norm.weight` is loaded as `weight − 1` (exact in float32 for
//! bf16 values in [2⁻²³, 2)), which makes candle compute the reference's function on the same
//! weights. Checkpoints with clipped linears are refused: candle's tower has no clipping.
//!
//! Each run (timed): `preprocess::open` (decode + EXIF orientation) → the `preprocess` crate's
//! gemma4 image path (budget resize, rescale: the same pixels as ours and the reference's) →
//! `VisionTower::forward` → `MultimodalEmbedder::forward`, all eager on candle's CPU device.
//! Prints one JSON line: load seconds, per-run seconds, their median, soft tokens per image,
//! peak RSS (VmHWM); `--out` saves the last run's features (`features`, float32
//! `[Σ soft tokens, text_hidden]`) as safetensors.

use candle::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::gemma4::config::Gemma4VisionConfig;
use candle_transformers::models::gemma4::multimodal_embedding::MultimodalEmbedder;
use candle_transformers::models::gemma4::vision::VisionTower;
use preprocess::{Limits, Preprocessor, ProcessorConfig, SettingsLayout, SoftTokenBudget};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str =
    "usage: candle-gemma4-bench --model DIR --image FILE [--image FILE]... [--budget N] [--runs N] [--out FILE]";

type Result<T> = std::result::Result<T, String>;

#[derive(Debug, Default)]
struct Args {
    model: PathBuf,
    images: Vec<PathBuf>,
    budget: Option<SoftTokenBudget>,
    runs: usize,
    out: Option<PathBuf>,
}

/// The loaded encoder: candle's tower and embedder with the image processor settings.
struct Encoder {
    tower: VisionTower,
    embedder: MultimodalEmbedder,
    processor: ProcessorConfig,
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match parse(&argv).and_then(|args| bench(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn parse(argv: &[String]) -> Result<Args> {
    let mut args = Args { runs: 3, ..Args::default() };
    let mut model = None;
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--model" => model = Some(PathBuf::from(value()?)),
            "--image" => args.images.push(value()?.into()),
            "--out" => args.out = Some(value()?.into()),
            "--budget" => args.budget = Some(value()?.parse().map_err(|e| format!("{flag}: {e}"))?),
            "--runs" => args.runs = positive(flag, &value()?)? as usize,
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    args.model = model.ok_or_else(|| format!("--model is required\n{USAGE}"))?;
    if args.images.is_empty() {
        return Err(format!("at least one --image is required\n{USAGE}"));
    }
    Ok(args)
}

fn positive(flag: &str, text: &str) -> Result<u32> {
    match text.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{flag}: `{text}` is not a positive integer")),
    }
}

fn bench(args: &Args) -> Result<()> {
    let device = Device::Cpu;
    let start = Instant::now();
    let encoder = load(&args.model, &device)?;
    let load_seconds = start.elapsed().as_secs_f64();

    let preprocessor = Preprocessor::new(encoder.processor.clone().with_max_soft_tokens(args.budget))
        .map_err(|e| format!("image processor: {e}"))?;
    let mut seconds = Vec::with_capacity(args.runs);
    let mut last = None;
    for _ in 0..args.runs {
        let start = Instant::now();
        let out = encode(&encoder, &preprocessor, &args.images, &device)?;
        seconds.push(start.elapsed().as_secs_f64());
        last = Some(out);
    }
    let (features, soft_tokens) = last.ok_or("no runs")?;
    if let Some(path) = &args.out {
        candle::safetensors::save(&HashMap::from([("features", features.clone())]), path)
            .map_err(|e| format!("saving {}: {e}", path.display()))?;
    }
    let mut sorted = seconds.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let list = |v: &[String]| v.join(", ");
    println!(
        "{{\"side\": \"candle\", \"dtype\": \"float32\", \"load_seconds\": {load_seconds:.6}, \"seconds\": [{}], \
         \"median\": {median:.6}, \"soft_tokens\": [{}], \"features_shape\": [{}], \"peak_rss_bytes\": {}}}",
        list(&seconds.iter().map(|s| format!("{s:.6}")).collect::<Vec<_>>()),
        list(&soft_tokens.iter().map(usize::to_string).collect::<Vec<_>>()),
        list(&features.dims().iter().map(usize::to_string).collect::<Vec<_>>()),
        peak_rss_bytes().map_or("null".to_owned(), |b| b.to_string()),
    );
    Ok(())
}

/// Bytes → features for every image: `[Σ soft tokens, text_hidden]` float32, and the soft
/// tokens of each image.
fn encode(
    encoder: &Encoder,
    preprocessor: &Preprocessor,
    images: &[PathBuf],
    device: &Device,
) -> Result<(Tensor, Vec<usize>)> {
    let mut pixels = Vec::with_capacity(images.len());
    let mut soft_tokens = Vec::with_capacity(images.len());
    for path in images {
        let image = preprocess::open(path, &Limits::default()).map_err(|e| format!("{}: {e}", path.display()))?;
        let values = preprocessor.gemma4_image(&image).map_err(|e| format!("{}: {e}", path.display()))?;
        soft_tokens.push(values.soft_tokens);
        let tensor = Tensor::from_vec(values.data, (1, 3, values.height, values.width), device).map_err(candle)?;
        pixels.push(tensor);
    }
    let pooled = encoder.tower.forward(&pixels).map_err(candle)?;
    let features = encoder.embedder.forward(&pooled).map_err(candle)?.squeeze(0).map_err(candle)?;
    Ok((features, soft_tokens))
}

fn candle(e: candle::Error) -> String {
    format!("candle: {e}")
}

/// Reads `config.json`, the vision tensors (renamed, norms shifted, float32) and the
/// processor settings of a gemma4 model directory.
fn load(dir: &Path, device: &Device) -> Result<Encoder> {
    let config_path = dir.join("config.json");
    let text = std::fs::read_to_string(&config_path).map_err(|e| format!("{}: {e}", config_path.display()))?;
    let config: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", config_path.display()))?;
    if config["model_type"] != "gemma4" {
        return Err(format!(
            "{}: candle has the gemma4 tower only, not {}",
            config_path.display(),
            config["model_type"]
        ));
    }
    if config["vision_config"]["use_clipped_linears"] == true {
        return Err(format!("{}: candle's VisionTower has no clipped linears", config_path.display()));
    }
    let vision: Gemma4VisionConfig = serde_json::from_value(config["vision_config"].clone())
        .map_err(|e| format!("{}: vision_config: {e}", config_path.display()))?;
    let text_hidden = config["text_config"]["hidden_size"]
        .as_u64()
        .ok_or_else(|| format!("{}: no text_config.hidden_size", config_path.display()))?
        as usize;

    let mut tensors = HashMap::new();
    for file in weight_files(dir)? {
        for (name, tensor) in
            candle::safetensors::load(&file, device).map_err(|e| format!("{}: {e}", file.display()))?
        {
            if let Some(key) = candle_key(&name) {
                let tensor = tensor.to_dtype(DType::F32).map_err(candle)?;
                let tensor = if key.ends_with("norm.weight") { (tensor - 1.0).map_err(candle)? } else { tensor };
                tensors.insert(key, tensor);
            }
        }
    }
    let vb = VarBuilder::from_tensors(tensors, DType::F32, device);
    let tower = VisionTower::new(&vision, vb.pp("vision_tower")).map_err(candle)?;
    let embedder = MultimodalEmbedder::new(vision.hidden_size, text_hidden, vision.rms_norm_eps, vb.pp("embed_vision"))
        .map_err(candle)?;
    // gemma4's layout, as `vision::Gemma4::settings_layout` gives it (this crate stays off
    // MLX, so it does not depend on `vision`): a flat `processor_config.json` holds the image
    // settings at its top level. A drift would show as candle's features disagreeing.
    let layout = SettingsLayout {
        flat_image_settings: true,
        num_soft_tokens_alias: false,
        video_inherits_image_settings: false,
    };
    let processor = ProcessorConfig::from_checkpoint_dir(dir, layout).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(Encoder { tower, embedder, processor })
}

/// `model.safetensors`, or the shards named by `model.safetensors.index.json`.
fn weight_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let index = dir.join("model.safetensors.index.json");
    if !index.is_file() {
        return Ok(vec![dir.join("model.safetensors")]);
    }
    let text = std::fs::read_to_string(&index).map_err(|e| format!("{}: {e}", index.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", index.display()))?;
    let map = json["weight_map"].as_object().ok_or_else(|| format!("{}: no weight_map", index.display()))?;
    let mut files: Vec<PathBuf> = map.values().filter_map(|v| v.as_str()).map(|f| dir.join(f)).collect();
    files.sort();
    files.dedup();
    Ok(files)
}

/// candle's name for a checkpoint tensor of the vision tower or its embedder (`model.` prefix
/// and the `ClippableLinear` `.linear` level dropped); `None` for every other tensor.
fn candle_key(name: &str) -> Option<String> {
    let name = name.strip_prefix("model.").unwrap_or(name);
    (name.starts_with("vision_tower.") || name.starts_with("embed_vision.")).then(|| name.replace(".linear.", "."))
}

/// The process's peak resident set (VmHWM), in bytes.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    Some(line.trim().trim_end_matches("kB").trim().parse::<u64>().ok()? * 1024)
}
