//! The streaming part of an `embed` job: decode and prepare on worker threads, encode batches
//! of same-size images on the calling thread, hand the results to the shard writer.
//!
//! Memory is bounded by the batch size, not the corpus: the workers stop when `batch` prepared
//! images wait in the channel, the encoding side holds at most `2 × batch` more while it groups
//! them by size, and the writer at most one shard.
//!
//! No image stops the job. Each worker reads and decodes on a helper thread it waits for at most
//! [`Settings::file_timeout`] ([`Deadline`]), and catches a panic of the rest of the image's
//! path (orientation, resize, preparation) at the image's boundary, so a worker always sends an
//! outcome for every image it takes and the channel never stalls. A batch the encoder fails on
//! is encoded again image by image, so that only the images that fail alone are recorded.

use crate::deadline::{Deadline, Waited};
use crate::failure::{Failure, panic_message};
use crate::shard::{ErrorRow, ImageRow, ShardWriter};
use crate::{Error, Progress, Result};
use preprocess::{Preprocessor, RgbImage};
use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;
use vision::{BatchKey, ErrorKind, Features, PreparedImage, SoftTokenBudget, VisionEncoder};

/// What the encoding side does with the images.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Images encoded together (all of one size).
    pub batch: NonZeroUsize,
    /// Threads decoding and preparing images.
    pub workers: NonZeroUsize,
    /// The budget, recorded with every image.
    pub budget: SoftTokenBudget,
    /// The longest a worker waits for one file to be read and decoded.
    pub file_timeout: Duration,
}

/// Counts of one run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Images encoded, and their soft tokens.
    pub encoded: usize,
    pub soft_tokens: usize,
    /// Images that could not be embedded (recorded).
    pub failed: usize,
}

/// One image off a worker: its path and either its prepared input or why it failed.
struct Item {
    path: String,
    outcome: Result<Ready, Failure>,
}

/// A prepared image and the size of the decoded image it came from.
struct Ready {
    image: PreparedImage,
    height: u32,
    width: u32,
}

/// Prepared images of one [`BatchKey`] waiting for their batch, with their recorded paths.
type Group = (BatchKey, Vec<(String, Ready)>);

/// Embeds `paths` (each recorded under its path as text) into `writer`. An image's failure is
/// recorded and the job goes on (see the module); an MLX failure or a failure to write ends it.
pub fn run(
    encoder: &VisionEncoder,
    preprocessor: &Preprocessor,
    paths: &[PathBuf],
    settings: Settings,
    writer: &mut ShardWriter,
    progress: &dyn Progress,
) -> Result<Counts> {
    let batch = settings.batch.get();
    let (sender, receiver) = mpsc::sync_channel::<Item>(batch);
    let next = AtomicUsize::new(0);
    let limits = encoder.options().limits;
    std::thread::scope(|scope| {
        for _ in 0..settings.workers.get() {
            let sender = sender.clone();
            let next = &next;
            scope.spawn(move || {
                let mut reader = Deadline::new(move |path: PathBuf| preprocess::open(&path, &limits));
                while let Some(path) = paths.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let recorded = path.to_string_lossy().into_owned();
                    let outcome = catch_unwind(AssertUnwindSafe(|| {
                        prepare(&mut reader, settings.file_timeout, encoder, preprocessor, path)
                    }))
                    .unwrap_or_else(|panic| {
                        Err(Failure::of_panic(&recorded, "preparing", &panic_message(panic.as_ref())))
                    });
                    if sender.send(Item { path: recorded, outcome }).is_err() {
                        break; // the encoding side stopped on an error
                    }
                }
            });
        }
        drop(sender);
        let mut batcher =
            Batcher { encoder, writer, progress, batch, budget: settings.budget, counts: Counts::default() };
        // The receiver is dropped when this returns, so the workers stop after an error.
        batcher.consume(receiver)?;
        Ok(batcher.counts)
    })
}

/// Reads and decodes one image (EXIF orientation applied) through `reader`, waiting at most
/// `timeout`, and prepares it. A panic while preparing is caught by the caller.
fn prepare<F>(
    reader: &mut Deadline<PathBuf, preprocess::Result<RgbImage>, F>,
    timeout: Duration,
    encoder: &VisionEncoder,
    preprocessor: &Preprocessor,
    path: &Path,
) -> Result<Ready, Failure>
where
    F: Fn(PathBuf) -> preprocess::Result<RgbImage> + Send + Sync + 'static,
{
    let decoded = match reader.call(path.to_path_buf(), timeout) {
        Waited::Done(Ok(decoded)) => decoded,
        Waited::Done(Err(error)) => return Err(Failure::of_open(&error)),
        Waited::Panicked(message) => {
            return Err(Failure::of_panic(&path.to_string_lossy(), "decoding", &message));
        }
        Waited::TimedOut => return Err(Failure::timeout(path, timeout)),
    };
    let (height, width) = (decoded.height(), decoded.width());
    let image = encoder.prepare(&decoded, preprocessor).map_err(|e| Failure::of_prepare(path, &e))?;
    Ok(Ready { image, height, width })
}

/// Groups prepared images by size and encodes them in batches.
struct Batcher<'a> {
    encoder: &'a VisionEncoder,
    writer: &'a mut ShardWriter,
    progress: &'a dyn Progress,
    batch: usize,
    budget: SoftTokenBudget,
    counts: Counts,
}

impl Batcher<'_> {
    fn consume(&mut self, receiver: mpsc::Receiver<Item>) -> Result<()> {
        // Groups in order of first appearance; at most 2 × batch images wait in all.
        let mut groups: Vec<Group> = Vec::new();
        let mut waiting = 0;
        for item in receiver {
            let ready = match item.outcome {
                Ok(ready) => ready,
                Err(failure) => {
                    self.record(item.path, failure)?;
                    continue;
                }
            };
            let key = self.encoder.family().batch_key(&ready.image);
            let at = match groups.iter().position(|(k, _)| *k == key) {
                Some(at) => at,
                None => {
                    groups.push((key, Vec::new()));
                    groups.len() - 1
                }
            };
            groups[at].1.push((item.path, ready));
            waiting += 1;
            let full = if groups[at].1.len() >= self.batch {
                Some(at)
            } else if waiting >= 2 * self.batch {
                // Too many sizes in flight: the largest group goes, partial.
                groups.iter().enumerate().max_by_key(|(i, (_, g))| (g.len(), usize::MAX - i)).map(|(i, _)| i)
            } else {
                None
            };
            if let Some(at) = full {
                let (_, group) = groups.remove(at);
                waiting -= group.len();
                self.encode(group)?;
            }
        }
        for (_, group) in groups {
            self.encode(group)?;
        }
        Ok(())
    }

    /// Records one image's failure.
    fn record(&mut self, path: String, failure: Failure) -> Result<()> {
        self.counts.failed += 1;
        self.writer.push_error(ErrorRow { path, kind: failure.kind, error: failure.message })?;
        self.progress.advanced(self.counts.encoded, self.counts.failed);
        Ok(())
    }

    /// Encodes one group of same-size images and hands each image's rows to the writer. When
    /// the encoder fails on the group, each image is encoded alone: an image it fails on alone
    /// is recorded ([`FailureKind::Encode`](crate::shard::FailureKind::Encode), or `Panic`),
    /// except for an MLX failure ([`ErrorKind::Compute`]: out of memory, a lost device), which
    /// is the machine's, not the image's, and stops the job (a rerun tries the image again).
    fn encode(&mut self, group: Vec<(String, Ready)>) -> Result<()> {
        let mut rows = Vec::with_capacity(group.len());
        let mut images = Vec::with_capacity(group.len());
        for (path, ready) in group {
            rows.push(ImageRow { path, soft_tokens: 0, height: ready.height, width: ready.width, budget: self.budget });
            images.push(ready.image);
        }
        if let Ok(features) = self.try_encode(&images) {
            drop(images);
            return self.write(rows, &features);
        }
        for (row, image) in rows.into_iter().zip(images) {
            match self.try_encode(std::slice::from_ref(&image)) {
                Ok(features) => self.write(vec![row], &features)?,
                Err(EncodeFailure::Error(error)) if error.kind() == ErrorKind::Compute => return Err(error.into()),
                Err(EncodeFailure::Error(error)) => {
                    let failure = Failure::of_encode(&row.path, &error);
                    self.record(row.path, failure)?;
                }
                Err(EncodeFailure::Panic(message)) => {
                    let failure = Failure::of_panic(&row.path, "encoding", &message);
                    self.record(row.path, failure)?;
                }
            }
        }
        Ok(())
    }

    /// The encoder's features for `images`, a panic caught.
    fn try_encode(&self, images: &[PreparedImage]) -> Result<Features, EncodeFailure> {
        match catch_unwind(AssertUnwindSafe(|| self.encoder.encode(images))) {
            Ok(Ok(features)) => Ok(features),
            Ok(Err(error)) => Err(EncodeFailure::Error(error)),
            Err(panic) => Err(EncodeFailure::Panic(panic_message(panic.as_ref()))),
        }
    }

    /// Hands the rows of `features` (the encoding of the images of `rows`, in order) to the writer.
    fn write(&mut self, rows: Vec<ImageRow>, features: &Features) -> Result<()> {
        let dtype = features.features.dtype();
        let total: usize = features.soft_tokens.iter().sum();
        let writer = &mut *self.writer;
        let progress = self.progress;
        let counts = &mut self.counts;
        features.features.with_bytes(|bytes| {
            let per_token = bytes.len().checked_div(total).unwrap_or(0);
            let mut start = 0;
            for (mut row, &n) in rows.into_iter().zip(&features.soft_tokens) {
                row.soft_tokens = n;
                let end = start + n * per_token;
                let own = bytes
                    .get(start..end)
                    .ok_or_else(|| Error::Features("the encoder returned fewer rows than soft tokens".into()))?;
                writer.push_image(row, dtype, own)?;
                start = end;
                counts.encoded += 1;
                counts.soft_tokens += n;
                progress.advanced(counts.encoded, counts.failed);
            }
            Ok(())
        })?
    }
}

/// Why the encoder gave no features for a batch.
enum EncodeFailure {
    Error(vision::Error),
    Panic(String),
}
