//! [`run`]: one embed job, start to finish.

use crate::index::{self, Index};
use crate::pipeline::{self, Settings};
use crate::shard::{JobFacts, ShardWriter};
use crate::{Error, Result};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use vision::{CacheIdentity, SoftTokenBudget, VisionEncoder};

/// How a job batches and shards its images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobOptions {
    /// Images encoded together (images of one size only).
    pub batch: NonZeroUsize,
    /// Entries (images and failures) per shard; a shard also closes at
    /// [`MAX_SHARD_FEATURE_BYTES`](crate::MAX_SHARD_FEATURE_BYTES) of features.
    pub shard_size: NonZeroUsize,
    /// Threads decoding and preparing images.
    pub workers: NonZeroUsize,
    /// The soft-token budget per image; `None`: the checkpoint's (else 280).
    pub budget: Option<SoftTokenBudget>,
    /// The longest one file may take to be read and decoded before it is recorded as a
    /// [`FailureKind::Timeout`](crate::FailureKind::Timeout) and the job goes on without it.
    /// The decode itself is abandoned on its thread, not stopped (it ends on its own: every
    /// decoder's work is bounded by its input and the job's limits).
    pub file_timeout: Duration,
}

/// [`JobOptions::file_timeout`]'s default: far longer than decoding the largest image the
/// default limits allow takes.
pub const DEFAULT_FILE_TIMEOUT: Duration = Duration::from_secs(120);

impl Default for JobOptions {
    /// Batches of 8, shards of 256 entries, one worker per core, the checkpoint's budget,
    /// [`DEFAULT_FILE_TIMEOUT`].
    fn default() -> JobOptions {
        JobOptions {
            batch: NonZeroUsize::new(8).unwrap_or(NonZeroUsize::MIN),
            shard_size: NonZeroUsize::new(256).unwrap_or(NonZeroUsize::MIN),
            workers: std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN),
            budget: None,
            file_timeout: DEFAULT_FILE_TIMEOUT,
        }
    }
}

/// Told as a job goes. Every method has a default that does nothing.
pub trait Progress {
    /// The job will process `total` images (those not yet recorded in the output).
    fn started(&self, total: usize) {
        let _ = total;
    }
    /// One more image is done: `encoded` and `failed` so far in this run.
    fn advanced(&self, encoded: usize, failed: usize) {
        let _ = (encoded, failed);
    }
}

/// A [`Progress`] that reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {}

/// What one run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Images this run encoded, and their soft tokens.
    pub encoded: usize,
    pub soft_tokens: usize,
    /// Images this run could not read or prepare (recorded in the shards and the errors file).
    pub failed: usize,
    /// Images skipped because earlier runs recorded them.
    pub skipped: usize,
    /// Shards this run wrote.
    pub shards: usize,
    /// Seconds from the first image to the last shard.
    pub seconds: f64,
    /// Failures recorded in the whole output directory, earlier runs' included.
    pub errors_total: usize,
    /// The encoder's cache identity, recorded in every shard.
    pub model_identity: String,
    /// The budget every image was encoded with.
    pub budget: SoftTokenBudget,
    /// The errors file: every failure of the directory, one JSON object per line.
    pub errors_file: PathBuf,
}

/// Embeds `images` with `encoder` into shards in `out` (created if missing), resumably: images
/// recorded in `out`'s shards by earlier runs (encoded or failed) are skipped, and temporary
/// files a killed run left are removed. Every shard is written whole or not at all; each
/// image's rows are what [`VisionEncoder::encode_files`] gives for that image alone. An image
/// that fails in any way (unreadable, not an image, refused, too large, slower to decode than
/// [`JobOptions::file_timeout`], a panic on its path, the encoder failing on it alone) is
/// recorded with its [`FailureKind`](crate::FailureKind) and message, and the job goes on; a
/// rerun skips it. Anything else (a foreign shard in `out`, a budget the encoder cannot serve,
/// an MLX failure, a write failure) stops the job with an [`Error`], after writing out what it
/// did so far (the last shard and the errors file).
pub fn run(
    encoder: &VisionEncoder,
    images: &[PathBuf],
    out: &Path,
    options: &JobOptions,
    progress: &dyn Progress,
) -> Result<Summary> {
    let preprocessor = encoder.preprocessor(options.budget)?;
    let budget = preprocessor.config().max_soft_tokens;
    let identity = encoder.cache_identity()?;

    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let index = Index::read(out, &identity, budget)?;
    let todo: Vec<PathBuf> = images.iter().filter(|p| !index.contains(&p.to_string_lossy())).cloned().collect();
    let skipped = images.len() - todo.len();

    let facts = JobFacts { identity: identity.clone(), budget, hidden: encoder.config().text_hidden_size as usize };
    let mut writer = ShardWriter::new(out, facts, options.shard_size, index.next_shard);
    let settings =
        Settings { batch: options.batch, workers: options.workers, budget, file_timeout: options.file_timeout };
    let started = Instant::now();
    progress.started(todo.len());
    let outcome = pipeline::run(encoder, &preprocessor, &todo, settings, &mut writer, progress);
    // What the run did before an error is kept: the last shard and the errors file are
    // written either way, so a rerun does not redo it.
    let (new_errors, shards) = writer.finish()?;
    let seconds = started.elapsed().as_secs_f64();

    let mut errors = index.errors;
    errors.extend(new_errors);
    index::write_errors(out, &errors)?;
    let counts = outcome?;
    Ok(Summary {
        encoded: counts.encoded,
        soft_tokens: counts.soft_tokens,
        failed: counts.failed,
        skipped,
        shards,
        seconds,
        errors_total: errors.len(),
        model_identity: identity,
        budget,
        errors_file: out.join(index::ERRORS_FILE),
    })
}
