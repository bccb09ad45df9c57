//! The corpus job: a corpus of image files into shards of Gemma 4 vision features, streaming,
//! with bounded memory, resumable. `gemma-vision embed` and the Python package run it.
//!
//! - [`list_images`]: which images a job embeds (a directory, a glob pattern, a `.txt` list).
//! - [`run`]: the job. Worker threads decode and prepare images into a bounded channel, the
//!   calling thread encodes batches of same-size images, and a [`ShardWriter`] writes each shard
//!   atomically; memory is bounded by the batch and one shard, not by the corpus. A rerun into
//!   the same directory skips what its shards hold; a shard of another encoder or budget there
//!   is refused.
//! - The shard format ([`shard`]): safetensors files written and read through `tensor`'s codec;
//!   [`read_shard_header`] reads one back without its data.
//!
//! # Example
//!
//! The files a job would embed from a directory (every file below it, sorted, hidden ones left
//! out; each is identified by its bytes when it is read); [`run`] takes them
//! with an encoder and an output directory:
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("gemma-vision-embed-doc-{}", std::process::id()));
//! std::fs::create_dir_all(dir.join("sub"))?;
//! for name in ["b.png", "a.jpg", ".hidden.png", "sub/c.webp"] {
//!     std::fs::write(dir.join(name), b"")?;
//! }
//! let images = gemma_vision_embed::list_images(&dir)?;
//! let names: Vec<_> = images.iter().filter_map(|p| p.strip_prefix(&dir).ok()).collect();
//! std::fs::remove_dir_all(&dir)?;
//! assert_eq!(names, ["a.jpg", "b.png", "sub/c.webp"].map(std::path::Path::new));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod deadline;
mod error;
mod failure;
mod index;
mod job;
mod pipeline;
pub mod shard;
mod sources;

pub use error::{Error, Result};
pub use index::ERRORS_FILE;
pub use job::{DEFAULT_FILE_TIMEOUT, JobOptions, Progress, Silent, Summary, run};
pub use shard::{
    ErrorRow, FORMAT, FailureKind, ImageRow, MAX_SHARD_FEATURE_BYTES, ShardHeader, ShardWriter, read_shard_header,
};
pub use sources::list_images;
