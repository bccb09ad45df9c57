//! Gemma 4 checkpoints by name: a model named as a local directory or as a Hugging Face Hub
//! repository (`org/name`, `org/name@revision`) resolved to a folder on this machine.
//!
//! - [`ModelSource`]: what the user named, parsed once.
//! - [`resolve`]: the folder, found without network when none is needed: the directory; a
//!   complete snapshot in the Hugging Face cache (as mlx-vlm leaves it), used in place; what
//!   this crate fetched before ([`Store`]); else only what a loader reads ([`Selection`]),
//!   fetched: the small files whole, each weight file's header by two ranged requests, then
//!   only the byte ranges of the selected tensors. A Gemma 4 checkpoint is mostly language
//!   model; its vision tower is a small part of it.
//! - [`HubEnvironment`]: the endpoint, caches, token and offline mode, from the variables the
//!   Hub's own clients read (`HF_ENDPOINT`, `HF_HOME`, `HF_HUB_CACHE`, `HF_TOKEN`,
//!   `HF_HUB_OFFLINE`, ...).
//!
//! What a fetch guarantees: every file appears whole or not at all (temporary files renamed
//! into place; a stored checkpoint's manifest is written last, and its folder renamed into
//! place); an interrupted fetch resumes where it stopped, within the same call (a dropped
//! connection is retried from the last byte received) and in the next one; two processes
//! fetching one commit take turns on a lock file, and the second finds the first's result;
//! sizes are checked against the safetensors headers and the Hub's listing, and the SHA-256 of
//! every LFS file fetched whole against the listing. A server that ignores ranges gets whole
//! files, written into the Hugging Face cache in its own layout.
//!
//! Blocking I/O (`ureq`), no async runtime. No MLX: this crate knows files and bytes, not models.

mod client;
mod environment;
mod error;
mod fetch;
mod hf_cache;
mod model_source;
mod progress;
mod repo_listing;
mod resolve;
mod selection;
mod shard_header;
mod store;
mod transfer;

#[cfg(feature = "stand-in")]
pub mod stand_in;

pub use environment::{HubEnvironment, Token};
pub use error::{Error, ErrorKind, Missing, Result};
pub use hf_cache::HfCache;
pub use model_source::{CommitId, HubModel, ModelSource, ParseError, RepoId, Revision};
pub use progress::Progress;
pub use repo_listing::{RepoFile, RepoListing};
pub use resolve::{Origin, ResolvedModel, resolve, resolve_hub};
pub use selection::{INDEX_FILE, Selection, indexed_shards, weight_files};
pub use shard_header::{HeaderTensor, MAX_HEADER_BYTES, ShardHeader, SubsetFile};
pub use store::{MANIFEST_FILE, Manifest, ManifestFile, Store};
