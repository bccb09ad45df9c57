//! [`Store`]: the vision-only checkpoints this crate fetched, one folder per commit, each with
//! its [`Manifest`].
//!
//! ```text
//! <store>/models--org--name/
//!     snapshots/<commit>/            a checkpoint: config files, the index, shards holding the
//!                                    selected tensors, gemma-vision-manifest.json (written last)
//!     refs/<branch or tag>           the commit it resolved to when last online
//!     partial/<commit>/              a fetch under way or interrupted (resumed from here)
//!     locks/<commit>.lock            held by the process fetching that commit
//! ```

use crate::{CommitId, Error, RepoId, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The file recording where a stored checkpoint came from.
pub const MANIFEST_FILE: &str = "gemma-vision-manifest.json";

/// The manifest's format version.
const MANIFEST_FORMAT: u32 = 1;

/// Where a stored checkpoint came from and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub repo: String,
    pub commit: String,
    /// The endpoint it was fetched from.
    pub endpoint: String,
    /// The files stored, in the order fetched.
    pub files: Vec<ManifestFile>,
    /// The bytes of every file of the revision: what a whole download takes.
    pub checkpoint_bytes: u64,
    /// The bytes received over the network to make it (headers, tensors, small files).
    pub fetched_bytes: u64,
}

/// One stored file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ManifestFile {
    pub path: String,
    /// The source file's size on the Hub.
    pub source_size: u64,
    /// The source file's ETag (an LFS file's SHA-256, else its git blob id), when sent.
    pub etag: Option<String>,
    /// The stored file's size.
    pub stored_size: u64,
    /// The tensors taken from a weight file (stored names); `None` for a file stored whole.
    pub tensors: Option<Vec<String>>,
}

impl Manifest {
    /// A manifest for `repo` at `commit`.
    pub fn new(repo: &RepoId, commit: &CommitId, endpoint: &str, checkpoint_bytes: u64) -> Manifest {
        Manifest {
            format: MANIFEST_FORMAT,
            repo: repo.as_str().to_owned(),
            commit: commit.as_str().to_owned(),
            endpoint: endpoint.to_owned(),
            files: Vec::new(),
            checkpoint_bytes,
            fetched_bytes: 0,
        }
    }

    /// The bytes of the stored files.
    pub fn stored_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.stored_size).sum()
    }

    /// The tensors taken, over all weight files.
    pub fn tensor_count(&self) -> usize {
        self.files.iter().filter_map(|f| f.tensors.as_ref()).map(Vec::len).sum()
    }
}

/// The store at a root (`GEMMA_VISION_CACHE`).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    pub fn new(root: impl Into<PathBuf>) -> Store {
        Store { root: root.into() }
    }

    fn repo_dir(&self, repo: &RepoId) -> PathBuf {
        self.root.join(hf_hub::Repo::model(repo.as_str().to_owned()).folder_name())
    }

    /// The folder of a complete checkpoint.
    pub fn snapshot_dir(&self, repo: &RepoId, commit: &CommitId) -> PathBuf {
        self.repo_dir(repo).join("snapshots").join(commit.as_str())
    }

    /// The folder of a fetch under way (what an interrupted fetch left, to resume).
    pub fn partial_dir(&self, repo: &RepoId, commit: &CommitId) -> PathBuf {
        self.repo_dir(repo).join("partial").join(commit.as_str())
    }

    /// The stored checkpoint of `commit` and its manifest, when complete (its manifest, written
    /// last, is there and names it).
    pub fn complete(&self, repo: &RepoId, commit: &CommitId) -> Option<(PathBuf, Manifest)> {
        let dir = self.snapshot_dir(repo, commit);
        let manifest: Manifest = serde_json::from_slice(&std::fs::read(dir.join(MANIFEST_FILE)).ok()?).ok()?;
        (manifest.format == MANIFEST_FORMAT && manifest.repo == repo.as_str() && manifest.commit == commit.as_str())
            .then_some((dir, manifest))
    }

    /// The commit `name` resolved to when last fetched or resolved online.
    pub fn commit_of(&self, repo: &RepoId, name: &str) -> Option<CommitId> {
        let text = std::fs::read_to_string(self.repo_dir(repo).join("refs").join(name)).ok()?;
        CommitId::from_str(text.trim()).ok()
    }

    /// Records that `name` resolves to `commit` (atomically).
    pub fn set_ref(&self, repo: &RepoId, name: &str, commit: &CommitId) -> Result<()> {
        let path = self.repo_dir(repo).join("refs").join(name);
        write_atomically(&path, commit.as_str().as_bytes())
    }

    /// Takes the lock of `commit`'s fetch, waiting while another process holds it. Released
    /// when the returned file is dropped.
    pub fn lock(&self, repo: &RepoId, commit: &CommitId) -> Result<File> {
        let dir = self.repo_dir(repo).join("locks");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let path = dir.join(format!("{commit}.lock"));
        let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
        file.lock().map_err(|e| Error::io(&path, e))?;
        Ok(file)
    }

    /// Writes `manifest` into the partial folder of its commit and renames the folder into
    /// place: the checkpoint appears whole or not at all.
    pub fn publish(&self, repo: &RepoId, commit: &CommitId, manifest: &Manifest) -> Result<PathBuf> {
        let partial = self.partial_dir(repo, commit);
        let bytes = serde_json::to_vec_pretty(manifest).map_err(|e| Error::io(&partial, e.into()))?;
        write_atomically(&partial.join(MANIFEST_FILE), &bytes)?;
        let snapshot = self.snapshot_dir(repo, commit);
        let parent = snapshot.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        if snapshot.exists() {
            // A snapshot without a valid manifest (one that was never complete): replaced.
            std::fs::remove_dir_all(&snapshot).map_err(|e| Error::io(&snapshot, e))?;
        }
        std::fs::rename(&partial, &snapshot).map_err(|e| Error::io(&snapshot, e))?;
        Ok(snapshot)
    }
}

/// Writes `bytes` to a temporary file beside `path`, flushed, then renamed onto it.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().ok_or_else(|| Error::io(path, std::io::ErrorKind::InvalidInput.into()))?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let unique = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temporary = dir.join(format!(".{name}.{}-{unique}.tmp", std::process::id()));
    std::fs::write(&temporary, bytes)
        .and_then(|()| File::open(&temporary)?.sync_all())
        .and_then(|()| std::fs::rename(&temporary, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            Error::io(path, e)
        })
}
