//! [`HfCache`]: the Hugging Face cache as `huggingface_hub` lays it out and mlx-vlm leaves it:
//! `models--org--name/{blobs,refs,snapshots/<commit>}`, files in snapshots linked to their blobs.

use crate::repo_listing::RepoListing;
use crate::selection::{INDEX_FILE, Selection, indexed_shards, weight_files};
use crate::transfer::{Sink, copy_exact};
use crate::{CommitId, Error, Progress, RepoId, Result};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The Hugging Face cache at a root (`HF_HUB_CACHE`).
#[derive(Debug, Clone)]
pub struct HfCache {
    root: PathBuf,
}

impl HfCache {
    pub fn new(root: impl Into<PathBuf>) -> HfCache {
        HfCache { root: root.into() }
    }

    /// `models--org--name`, hf-hub's name for a model repository's folder.
    pub fn repo_dir(&self, repo: &RepoId) -> PathBuf {
        self.root.join(hf_hub::Repo::model(repo.as_str().to_owned()).folder_name())
    }

    /// The snapshot folder of a commit.
    pub fn snapshot_dir(&self, repo: &RepoId, commit: &CommitId) -> PathBuf {
        self.repo_dir(repo).join("snapshots").join(commit.as_str())
    }

    /// The commit a branch or tag pointed to when this cache last saw it (`refs/<name>`).
    pub fn commit_of(&self, repo: &RepoId, name: &str) -> Option<CommitId> {
        let cache = hf_hub::Cache::new(self.root.clone());
        let repo = hf_hub::Repo::with_revision(repo.as_str().to_owned(), hf_hub::RepoType::Model, name.to_owned());
        // `CacheRepo::get` reads `refs/<name>` and looks the file up in that snapshot.
        let config = cache.repo(repo).get("config.json")?;
        let commit = config.parent()?.file_name()?.to_str()?;
        CommitId::from_str(commit).ok()
    }

    /// The snapshot of `commit` when it is complete for `selection`: `config.json`, and the
    /// weight files — every shard the index names when there is an index, else at least one
    /// `*.safetensors` — each a whole file (a link to a present blob). With the revision's
    /// `listing`, the selection's files it holds must be there too, at the sizes it gives.
    pub fn complete_snapshot(
        &self,
        repo: &RepoId,
        commit: &CommitId,
        selection: &Selection,
        listing: Option<&RepoListing>,
    ) -> Option<PathBuf> {
        let dir = self.snapshot_dir(repo, commit);
        if !dir.join("config.json").is_file() {
            return None;
        }
        let present: Vec<String> = std::fs::read_dir(&dir)
            .ok()?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        let has = |name: &str| present.iter().any(|p| p == name);
        let indexed = match std::fs::read(dir.join(INDEX_FILE)) {
            Ok(text) => indexed_shards(&text).ok()?,
            Err(_) if listing.is_some_and(|l| l.files.contains_key(INDEX_FILE)) => return None,
            Err(_) => None,
        };
        let weights = match &indexed {
            Some(shards) if !shards.is_empty() => {
                if !shards.iter().all(|s| has(s)) {
                    return None;
                }
                shards.iter().cloned().collect()
            }
            _ => weight_files(None, present.iter().map(String::as_str)),
        };
        if weights.is_empty() {
            return None;
        }
        if let Some(listing) = listing {
            let wanted = selection.files.iter().chain(&weights).filter(|f| listing.files.contains_key(f.as_str()));
            for file in wanted {
                let size = std::fs::metadata(dir.join(file)).ok()?.len();
                if listing.files[file.as_str()].size.is_some_and(|s| s != size) {
                    return None;
                }
            }
        }
        Some(dir)
    }

    /// Writes a whole file of a commit into the cache as `huggingface_hub` does: into
    /// `blobs/<etag>.incomplete`, checked (its size, and its SHA-256 when given), renamed to
    /// `blobs/<etag>`, then linked from `snapshots/<commit>/<path>`; under the lock file
    /// `huggingface_hub` takes for that blob (`.locks/models--org--name/<etag>.lock`). Returns the
    /// snapshot path.
    #[allow(clippy::too_many_arguments, reason = "one whole file's identity, its source and its checks")]
    pub fn write_whole_file(
        &self,
        model: &str,
        repo: &RepoId,
        commit: &CommitId,
        path: &str,
        etag: &str,
        size: u64,
        sha256: Option<&str>,
        body: impl Read,
        progress: &Progress,
    ) -> Result<PathBuf> {
        if etag.is_empty() || etag.contains(['/', '\\']) || etag.starts_with('.') {
            return Err(Error::Malformed {
                model: model.to_owned(),
                what: path.to_owned(),
                detail: format!("the ETag `{etag}` cannot name a blob"),
            });
        }
        let repo_dir = self.repo_dir(repo);
        let blobs = repo_dir.join("blobs");
        let locks = self.root.join(".locks").join(repo_dir.file_name().unwrap_or_default());
        for dir in [&blobs, &locks] {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let lock_path = locks.join(format!("{etag}.lock"));
        let lock = File::create(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
        lock.lock().map_err(|e| Error::io(&lock_path, e))?;
        let blob = blobs.join(etag);
        if std::fs::metadata(&blob).ok().map(|m| m.len()) != Some(size) {
            let incomplete = blobs.join(format!("{etag}.incomplete"));
            let file = File::create(&incomplete).map_err(|e| Error::io(&incomplete, e))?;
            let mut sink = Sink::new(file, &incomplete, sha256.is_some());
            copy_exact(model, path, body, &mut sink, size, progress)?;
            let actual = sink.finish()?;
            if let (Some(expected), Some(actual)) = (sha256, actual)
                && !expected.eq_ignore_ascii_case(&actual)
            {
                let _ = std::fs::remove_file(&incomplete);
                return Err(Error::Checksum {
                    model: model.to_owned(),
                    file: path.to_owned(),
                    expected: expected.to_owned(),
                    actual,
                });
            }
            std::fs::rename(&incomplete, &blob).map_err(|e| Error::io(&blob, e))?;
        }
        let link = self.snapshot_dir(repo, commit).join(path);
        let parent = link.parent().unwrap_or(&repo_dir);
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        let up = "../".repeat(2 + path.matches('/').count());
        let _ = std::fs::remove_file(&link);
        symlink(Path::new(&format!("{up}blobs/{etag}")), &link).map_err(|e| Error::io(&link, e))?;
        Ok(link)
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(windows)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::windows::fs::symlink_file(target, link)
}
