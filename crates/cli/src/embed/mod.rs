//! `gemma-vision embed`: a corpus of images into shards of soft tokens, streaming, with bounded
//! memory, resumable.
//!
//! [`sources`] lists the images; [`index`] reads what the output directory already holds, and
//! the images recorded there (encoded or failed) are skipped; [`pipeline`] decodes and prepares
//! on worker threads and encodes batches of same-size images; [`shard`] writes each shard
//! atomically; [`progress`] draws the bar and the summary.

mod index;
mod pipeline;
mod progress;
mod shard;
mod sources;

use crate::args::{DtypeArg, ModelArgs};
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;
use vision::{EncoderOptions, VisionEncoder};

/// Embed a corpus of images into shards of soft tokens, resumably.
///
/// Writes `shard-NNNNNN.safetensors` files into the output directory, each holding `features`
/// ([Σ soft tokens, text_hidden], the encoder's dtype), `soft_tokens` (int32, one per image) and
/// metadata: `images` (a JSON array of {path, soft_tokens, height, width, budget}, in row
/// order), `errors` (images that could not be read, with the message), `model_identity` and
/// `max_soft_tokens`. Each image's rows are what `gemma-vision encode` writes for it alone.
/// Shards are written whole or not at all: rerunning the same command after an interruption
/// (a kill included) skips the images already recorded, unreadable ones included. `errors.jsonl` lists every image that
/// could not be read; the job goes on without them.
#[derive(Debug, Args)]
pub struct EmbedArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The images: a directory (searched recursively for .jpg .jpeg .png .gif .webp .bmp .tif
    /// .tiff), a quoted glob pattern ('photos/**/*.jpg'), or a .txt file listing one path per
    /// line (relative paths from the list's directory).
    #[arg(long, value_name = "DIR|GLOB|LIST.txt")]
    images: PathBuf,
    /// The output directory (created if missing; rerun into it to resume).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Images encoded together (images of one size only).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = positive)]
    batch: usize,
    /// Images per shard (a shard also closes at 256 MiB of features).
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = positive)]
    shard_size: usize,
    /// The dtype to compute in.
    #[arg(long, value_enum, default_value_t = DtypeArg::Native)]
    dtype: DtypeArg,
    /// Threads decoding and preparing images [default: one per core].
    #[arg(long, value_name = "N", value_parser = positive)]
    workers: Option<usize>,
}

pub fn run(args: &EmbedArgs) -> Result<(), String> {
    // A command runs alone in its process: keep MLX's freed intermediates mapped for reuse.
    tensor::memory::retain_freed_host_memory();
    let paths = sources::list(&args.images)?;
    let options = EncoderOptions { compute_dtype: args.dtype.into(), ..EncoderOptions::default() };
    let encoder = VisionEncoder::load(&args.model.model, options).map_err(|e| e.to_string())?;
    let preprocessor = encoder.preprocessor(args.model.max_soft_tokens).map_err(|e| e.to_string())?;
    encoder.check_budget(&preprocessor).map_err(|e| e.to_string())?;
    let budget = preprocessor.config().max_soft_tokens;
    let identity = encoder.cache_identity().map_err(|e| e.to_string())?;

    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let index = index::Index::read(&args.out, &identity, budget)?;
    let todo: Vec<PathBuf> = paths.iter().filter(|p| !index.contains(&p.to_string_lossy())).cloned().collect();
    let skipped = paths.len() - todo.len();

    let facts = shard::JobFacts { identity, budget, hidden: encoder.config().text_hidden_size as usize };
    let mut writer = shard::ShardWriter::new(&args.out, facts, args.shard_size, index.next_shard);
    let workers = args.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let settings = pipeline::Settings { batch: args.batch, workers, budget };
    let started = Instant::now();
    let progress = progress::Progress::new(todo.len());
    let counts = pipeline::run(&encoder, &preprocessor, &todo, settings, &mut writer, &progress);
    progress.finish();
    let counts = counts?;
    let (new_errors, shards) = writer.finish()?;
    let seconds = started.elapsed().as_secs_f64();

    let mut errors = index.errors;
    errors.extend(new_errors);
    index::write_errors(&args.out, &errors)?;
    let summary = progress::Summary {
        encoded: counts.encoded,
        soft_tokens: counts.soft_tokens,
        failed: counts.failed,
        skipped,
        shards,
        seconds,
        errors_total: errors.len(),
        peak_rss: progress::peak_rss(),
    };
    let out = args.out.display().to_string();
    let errors_file = args.out.join(index::ERRORS_FILE).display().to_string();
    for line in summary.lines(&out, &errors_file) {
        println!("{line}");
    }
    Ok(())
}

/// A positive count.
fn positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be positive".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a positive integer")),
    }
}
