//! `gemma-vision embed`: a corpus of images into shards of soft tokens, streaming, with bounded
//! memory, resumable: the `embed` crate's job, with a progress bar and a summary.

use crate::args::{self, ModelArgs};
use crate::embed_progress::{self, ProgressBar, summary_lines};
use clap::Args;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;
use vision::{ComputeDtype, EncoderOptions, VisionEncoder};

/// Embed a corpus of images into shards of soft tokens, resumably.
///
/// Writes `shard-NNNNNN.safetensors` files into the output directory, each holding `features`
/// ([Σ soft tokens, text_hidden], the encoder's dtype), `soft_tokens` (int32, one per image) and
/// metadata: `images` (a JSON array of {path, soft_tokens, height, width, budget}, in row
/// order), `errors` (images that could not be read, with the message), `model_identity` and
/// `max_soft_tokens`. Each image's rows are what `gemma-vision encode` writes for it alone.
/// Shards are written whole or not at all: rerunning the same command after an interruption
/// (a kill included) skips the images already recorded, failed ones included. `errors.jsonl` lists every image that
/// could not be embedded ({path, kind, error}: unreadable, unknown_format, unsupported_format, malformed, too_large,
/// decoder_panic, panic, timeout, prepare, encode); the job goes on without them.
#[derive(Debug, Args)]
pub struct EmbedArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The images: a directory (every file below it that is not hidden, whatever its extension:
    /// images are identified by their bytes, as Pillow does), a quoted glob pattern
    /// ('photos/**/*.jpg'), or a .txt file listing one path per line (relative paths from the
    /// list's directory).
    #[arg(long, value_name = "DIR|GLOB|LIST.txt")]
    images: PathBuf,
    /// The output directory (created if missing; rerun into it to resume).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Images encoded together (images of one size only).
    #[arg(long, value_name = "N", default_value = "8", value_parser = positive)]
    batch: NonZeroUsize,
    /// Images per shard (a shard also closes at 256 MiB of features).
    #[arg(long, value_name = "N", default_value = "256", value_parser = positive)]
    shard_size: NonZeroUsize,
    /// The dtype to compute in: native (the checkpoint's own, bf16 for published checkpoints)
    /// or f32 (weights cast to float32 once at load).
    #[arg(long, value_name = "native|f32", default_value = "native", value_parser = args::compute_dtype)]
    dtype: ComputeDtype,
    /// Threads decoding and preparing images [default: one per core].
    #[arg(long, value_name = "N", value_parser = positive)]
    workers: Option<NonZeroUsize>,
    /// The longest one file may take to be read and decoded, in seconds; a slower one is
    /// recorded in errors.jsonl as a timeout and the job goes on.
    #[arg(long, value_name = "SECONDS", default_value = "120", value_parser = seconds)]
    file_timeout: Duration,
}

pub fn run(args: &EmbedArgs) -> Result<(), crate::Error> {
    // A command runs alone in its process: keep MLX's freed intermediates mapped for reuse.
    tensor::memory::retain_freed_host_memory();
    let images = embed::list_images(&args.images)?;
    let options = EncoderOptions { compute_dtype: args.dtype, ..EncoderOptions::default() };
    let encoder = VisionEncoder::load(&args.model.model, options)?;
    let defaults = embed::JobOptions::default();
    let job = embed::JobOptions {
        batch: args.batch,
        shard_size: args.shard_size,
        workers: args.workers.unwrap_or(defaults.workers),
        budget: args.model.max_soft_tokens,
        file_timeout: args.file_timeout,
    };
    let progress = ProgressBar::default();
    let summary = embed::run(&encoder, &images, &args.out, &job, &progress);
    progress.finish();
    for line in summary_lines(&summary?, &args.out.display().to_string(), embed_progress::peak_rss()) {
        println!("{line}");
    }
    Ok(())
}

/// A positive count.
fn positive(text: &str) -> Result<NonZeroUsize, String> {
    match text.parse::<usize>() {
        Ok(n) => NonZeroUsize::new(n).ok_or_else(|| "must be positive".to_owned()),
        Err(_) => Err(format!("`{text}` is not a positive integer")),
    }
}

/// A positive, finite number of seconds.
fn seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 => Duration::try_from_secs_f64(s).map_err(|e| e.to_string()),
        Ok(_) => Err("must be positive".to_owned()),
        Err(_) => Err(format!("`{text}` is not a number of seconds")),
    }
}
