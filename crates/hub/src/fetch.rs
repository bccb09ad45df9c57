//! Fetching only what a loader reads of a revision into the [`Store`]: its small files whole,
//! each weight file's header, then only the byte ranges of the selected tensors; resumed where
//! an earlier attempt stopped. A server that ignores ranges gets whole weight files, written
//! into the Hugging Face cache as its own clients write them, and the selection is taken from
//! those.

use crate::client::{Client, Reply};
use crate::error::Missing;
use crate::hf_cache::HfCache;
use crate::repo_listing::{RepoFile, RepoListing, file_url};
use crate::selection::{INDEX_FILE, Selection, indexed_shards, weight_files};
use crate::shard_header::{ShardHeader, SubsetFile};
use crate::store::{Manifest, ManifestFile, Store, write_atomically};
use crate::transfer::{Sink, copy_exact};
use crate::{CommitId, Error, HubEnvironment, HubModel, Progress, RepoId, Result};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The most bytes a small file (a config, the index) may take.
const MAX_SMALL_FILE: u64 = 64 << 20;

/// Attempts per byte range: a dropped connection is resumed from the last byte received.
const ATTEMPTS: usize = 5;

/// One fetch of a revision.
pub(crate) struct Fetch<'a> {
    client: &'a Client,
    environment: &'a HubEnvironment,
    name: String,
    repo: &'a RepoId,
    commit: &'a CommitId,
    listing: &'a RepoListing,
    selection: &'a Selection,
    /// Weight file → the content store's URL its first answer came from.
    content_urls: RefCell<HashMap<String, String>>,
}

/// A weight file's part of the plan.
struct Shard {
    path: String,
    size: u64,
    etag: Option<String>,
    subset: SubsetFile,
    header_bytes: u64,
}

impl<'a> Fetch<'a> {
    pub(crate) fn new(
        client: &'a Client,
        environment: &'a HubEnvironment,
        model: &'a HubModel,
        commit: &'a CommitId,
        listing: &'a RepoListing,
        selection: &'a Selection,
    ) -> Fetch<'a> {
        let content_urls = RefCell::new(HashMap::new());
        Fetch {
            client,
            environment,
            name: model.to_string(),
            repo: &model.repo,
            commit,
            listing,
            selection,
            content_urls,
        }
    }

    /// Fetches into the store under the commit's lock, unless another process completed it
    /// meanwhile; returns the checkpoint's folder and manifest.
    pub(crate) fn run(&self) -> Result<(PathBuf, Manifest)> {
        let store = Store::new(&self.environment.store);
        let _lock = store.lock(self.repo, self.commit)?;
        if let Some(done) = store.complete(self.repo, self.commit) {
            return Ok(done);
        }
        let partial = store.partial_dir(self.repo, self.commit);
        std::fs::create_dir_all(&partial).map_err(|e| Error::io(&partial, e))?;
        let checkpoint_bytes = self.listing.files.values().filter_map(|f| f.size).sum();
        let mut manifest = Manifest::new(self.repo, self.commit, self.client.endpoint(), checkpoint_bytes);
        if !self.listing.files.contains_key("config.json") {
            return Err(self.not_found(Missing::File("config.json".into())));
        }
        let mut small: Vec<&str> = self.selection.files.iter().map(String::as_str).collect();
        small.push(INDEX_FILE);
        let mut index = None;
        for file in small.into_iter().filter(|f| self.listing.files.contains_key(*f)) {
            let (bytes, entry) = self.small_file(&partial, file)?;
            manifest.fetched_bytes += entry.stored_size;
            manifest.files.push(entry);
            if file == INDEX_FILE {
                index = Some(bytes);
            }
        }
        let indexed = match &index {
            Some(bytes) => indexed_shards(bytes).map_err(|detail| self.malformed(INDEX_FILE, detail))?,
            None => None,
        };
        let weights = weight_files(indexed.as_ref(), self.listing.files.keys().map(String::as_str));
        if weights.is_empty() {
            return Err(self.not_found(Missing::Weights));
        }
        let mut shards = Vec::new();
        for path in weights {
            match self.header(&path)? {
                Ok(shard) => shards.push(shard),
                Err(reply) => {
                    let (shard, stored) = self.whole_weight_file(&partial, &path, reply)?;
                    manifest.fetched_bytes += shard.size;
                    manifest.files.extend(stored);
                }
            }
        }
        let total = shards.iter().map(|s| s.subset.data_len()).sum();
        let progress = Progress::new(self.environment.progress, total, format!("fetching {}", self.name));
        for shard in shards.iter().filter(|s| !s.subset.tensors.is_empty()) {
            if let Some(reply) = self.tensors(&partial, shard, &progress)? {
                progress.finish();
                let (whole, stored) = self.whole_weight_file(&partial, &shard.path, reply)?;
                manifest.fetched_bytes += whole.size;
                manifest.files.extend(stored);
                continue;
            }
            manifest.fetched_bytes += shard.header_bytes + shard.subset.data_len();
            manifest.files.push(stored_entry(shard));
        }
        manifest.fetched_bytes +=
            shards.iter().filter(|s| s.subset.tensors.is_empty()).map(|s| s.header_bytes).sum::<u64>();
        progress.finish();
        let dir = store.publish(self.repo, self.commit, &manifest)?;
        Ok((dir, manifest))
    }

    /// A small file, whole (kept from an earlier attempt when already fetched).
    fn small_file(&self, partial: &Path, file: &str) -> Result<(Vec<u8>, ManifestFile)> {
        let listed = &self.listing.files[file];
        let target = partial.join(file);
        let bytes = match std::fs::read(&target) {
            Ok(bytes) if listed.size.is_none_or(|s| s == bytes.len() as u64) => bytes,
            _ => {
                let bytes = retried(|| {
                    let reply = self.get(file, None, Missing::File(file.to_owned()))?;
                    reply.read_all(&self.name, listed.size, MAX_SMALL_FILE)
                })?;
                self.check_sha256(file, listed, &bytes)?;
                write_atomically(&target, &bytes)?;
                bytes
            }
        };
        let entry = ManifestFile {
            path: file.to_owned(),
            source_size: bytes.len() as u64,
            etag: listed.lfs_sha256.clone(),
            stored_size: bytes.len() as u64,
            tensors: None,
        };
        Ok((bytes, entry))
    }

    /// A weight file's header (two ranged requests: its length, then its JSON) and the subset
    /// the selection takes; `Err(reply)` when the server ignored the range and is sending the
    /// whole file.
    fn header(&self, path: &str) -> Result<std::result::Result<Shard, Reply>> {
        let (prefix, size, etag) = match self.small_range(path, 0..8)? {
            Ok(read) => read,
            Err(reply) => return Ok(Err(reply)),
        };
        let prefix: [u8; 8] = prefix.try_into().unwrap_or_default();
        let json_len = ShardHeader::json_len(prefix, size).map_err(|detail| self.malformed(path, detail))?;
        let json = match self.small_range(path, 8..8 + json_len)? {
            Ok((json, _, _)) => json,
            Err(reply) => return Ok(Err(reply)),
        };
        let header = ShardHeader::parse(&json, size).map_err(|detail| self.malformed(path, detail))?;
        let subset = header.subset(|name| self.selection.takes_tensor(name));
        Ok(Ok(Shard { path: path.to_owned(), size, etag, subset, header_bytes: 8 + json_len }))
    }

    /// A small range of a weight file (retried whole when interrupted): its bytes, the file's
    /// size and ETag; `Err(reply)` when the server ignored the range.
    fn small_range(&self, path: &str, range: Range<u64>) -> Result<std::result::Result<RangeBytes, Reply>> {
        retried(|| {
            let reply = self.get(path, Some(range.clone()), Missing::File(path.to_owned()))?;
            if reply.status == 200 {
                return Ok(Err(reply));
            }
            let size = self.file_size(path, &reply, range.clone())?;
            let etag = reply.etag.clone();
            let len = range.end - range.start;
            Ok(Ok((reply.read_all(&self.name, Some(len), len)?, size, etag)))
        })
    }

    /// Fetches the selected tensors of `shard` into `partial/<path>`: its new header, then each
    /// run of bytes, resuming after what an earlier attempt wrote. `Some(reply)` when the
    /// server ignored a range (the caller takes the whole file from the reply).
    fn tensors(&self, partial: &Path, shard: &Shard, progress: &Progress) -> Result<Option<Reply>> {
        let target = partial.join(&shard.path);
        let header = &shard.subset.header;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&target)
            .map_err(|e| Error::io(&target, e))?;
        let mut written = file.metadata().map_err(|e| Error::io(&target, e))?.len();
        let mut existing = vec![0u8; header.len().min(written as usize)];
        file.read_exact(&mut existing).map_err(|e| Error::io(&target, e))?;
        if written < header.len() as u64 || written > shard.subset.len() || existing != *header {
            file.set_len(0).map_err(|e| Error::io(&target, e))?;
            file.seek(SeekFrom::Start(0)).map_err(|e| Error::io(&target, e))?;
            file.write_all(header).map_err(|e| Error::io(&target, e))?;
            written = header.len() as u64;
        }
        file.seek(SeekFrom::Start(written)).map_err(|e| Error::io(&target, e))?;
        progress.advance(written - header.len() as u64);
        let mut sink = Sink::new(file, &target, false);
        let mut offset = header.len() as u64;
        for run in &shard.subset.runs {
            let len = run.end - run.start;
            let done = (written.saturating_sub(offset)).min(len);
            offset += len;
            let mut next = run.start + done;
            let mut attempts = 0;
            while next < run.end {
                attempts += 1;
                let before = sink.written();
                match self.range_into(shard, next..run.end, &mut sink, progress)? {
                    Ok(()) => break,
                    Err(RangeFailure::Ignored(reply)) => {
                        drop(sink);
                        let _ = std::fs::remove_file(&target);
                        return Ok(Some(reply));
                    }
                    Err(RangeFailure::Interrupted(error)) if attempts >= ATTEMPTS => return Err(error),
                    Err(RangeFailure::Interrupted(_)) => next += sink.written() - before,
                }
            }
        }
        sink.finish()?;
        Ok(None)
    }

    /// One ranged GET into `sink`.
    fn range_into(
        &self,
        shard: &Shard,
        range: Range<u64>,
        sink: &mut Sink,
        progress: &Progress,
    ) -> Result<std::result::Result<(), RangeFailure>> {
        let reply = match self.get(&shard.path, Some(range.clone()), Missing::File(shard.path.clone())) {
            Ok(reply) => reply,
            Err(error @ (Error::Network { .. } | Error::Length { .. })) => {
                return Ok(Err(RangeFailure::Interrupted(error)));
            }
            Err(error) => return Err(error),
        };
        if reply.status == 200 {
            return Ok(Err(RangeFailure::Ignored(reply)));
        }
        let size = self.file_size(&shard.path, &reply, range.clone())?;
        if size != shard.size {
            return Err(self
                .length(&reply.url, format!("the file now has {size} bytes, its header was read at {}", shard.size)));
        }
        let url = reply.url.clone();
        match copy_exact(&self.name, &url, reply.reader(), sink, range.end - range.start, progress) {
            Ok(()) => Ok(Ok(())),
            Err(error @ Error::Length { .. }) => Ok(Err(RangeFailure::Interrupted(error))),
            Err(error) => Err(error),
        }
    }

    /// A weight file sent whole (the server ignored ranges): written into the Hugging Face
    /// cache (checked), then its selected tensors copied from there into `partial/<path>`.
    fn whole_weight_file(&self, partial: &Path, path: &str, reply: Reply) -> Result<(Shard, Option<ManifestFile>)> {
        let listed = self.listing.files.get(path);
        let size = match (listed.and_then(|l| l.size), reply.content_length, reply.linked_size) {
            (Some(size), _, _) | (None, Some(size), _) | (None, None, Some(size)) => size,
            (None, None, None) => return Err(self.length(&reply.url, "the whole file came without a size".into())),
        };
        let etag = listed
            .and_then(|l| l.lfs_sha256.clone())
            .or_else(|| reply.etag.clone())
            .ok_or_else(|| self.malformed(path, "the whole file came without an ETag to name its blob".into()))?;
        let sha256 = listed.and_then(|l| l.lfs_sha256.clone());
        let cache = HfCache::new(&self.environment.hf_cache);
        let progress = Progress::new(self.environment.progress, size, format!("fetching {path} whole"));
        let body = reply.reader();
        let whole = cache.write_whole_file(
            &self.name,
            self.repo,
            self.commit,
            path,
            &etag,
            size,
            sha256.as_deref(),
            body,
            &progress,
        )?;
        progress.finish();
        let mut source = File::open(&whole).map_err(|e| Error::io(&whole, e))?;
        let mut prefix = [0u8; 8];
        source.read_exact(&mut prefix).map_err(|e| Error::io(&whole, e))?;
        let json_len = ShardHeader::json_len(prefix, size).map_err(|detail| self.malformed(path, detail))?;
        let mut json = vec![0u8; json_len as usize];
        source.read_exact(&mut json).map_err(|e| Error::io(&whole, e))?;
        let header = ShardHeader::parse(&json, size).map_err(|detail| self.malformed(path, detail))?;
        let subset = header.subset(|name| self.selection.takes_tensor(name));
        let shard = Shard { path: path.to_owned(), size, etag: Some(etag), subset, header_bytes: 8 + json_len };
        if shard.subset.tensors.is_empty() {
            return Ok((shard, None));
        }
        let target = partial.join(path);
        let mut out = File::create(&target).map_err(|e| Error::io(&target, e))?;
        out.write_all(&shard.subset.header).map_err(|e| Error::io(&target, e))?;
        for run in &shard.subset.runs {
            source.seek(SeekFrom::Start(run.start)).map_err(|e| Error::io(&whole, e))?;
            let copied = std::io::copy(&mut (&mut source).take(run.end - run.start), &mut out)
                .map_err(|e| Error::io(&target, e))?;
            if copied != run.end - run.start {
                return Err(Error::io(&whole, std::io::ErrorKind::UnexpectedEof.into()));
            }
        }
        out.sync_all().map_err(|e| Error::io(&target, e))?;
        let stored = stored_entry(&shard);
        Ok((shard, Some(stored)))
    }

    /// GETs a file of the commit. A weight file's later ranges go straight to the content
    /// store's URL its first answer came from (saving the Hub's redirect per range); when that
    /// URL is refused (a signature expired), the file is resolved through the Hub again.
    fn get(&self, path: &str, range: Option<Range<u64>>, missing: Missing) -> Result<Reply> {
        let resolve = file_url(self.client.endpoint(), self.repo, self.commit, path);
        let cached = self.content_urls.borrow().get(path).cloned();
        if let Some(url) = cached {
            match self.client.get(&self.name, &url, range.clone(), missing.clone()) {
                Ok(reply) => return Ok(reply),
                Err(Error::Unauthorized { .. } | Error::NotFound { .. } | Error::Status { .. }) => {
                    self.content_urls.borrow_mut().remove(path);
                }
                Err(error) => return Err(error),
            }
        }
        let reply = self.client.get(&self.name, &resolve, range, missing)?;
        if let Some(commit) = &reply.repo_commit
            && commit != self.commit.as_str()
        {
            return Err(self.malformed(path, format!("the Hub answered for commit {commit}, not {}", self.commit)));
        }
        if reply.url != resolve && path.ends_with(".safetensors") {
            self.content_urls.borrow_mut().insert(path.to_owned(), reply.url.clone());
        }
        Ok(reply)
    }

    /// The file's size from a 206's `Content-Range`, which must cover exactly `range`, checked
    /// against the listing's size.
    fn file_size(&self, path: &str, reply: &Reply, range: Range<u64>) -> Result<u64> {
        let (sent, total) = reply.content_range.clone().unwrap_or((0..0, None));
        if sent != range {
            return Err(self.length(&reply.url, format!("asked for bytes {range:?}, the answer holds {sent:?}")));
        }
        if let Some(length) = reply.content_length
            && length != range.end - range.start
        {
            return Err(
                self.length(&reply.url, format!("declared {length} bytes for a range of {}", range.end - range.start))
            );
        }
        let listed = self.listing.files.get(path).and_then(|f| f.size);
        match (total, listed) {
            (Some(total), Some(listed)) if total != listed => {
                Err(self.length(&reply.url, format!("the file has {total} bytes, the Hub's listing says {listed}")))
            }
            (Some(size), _) | (None, Some(size)) => Ok(size),
            (None, None) => Err(self.length(&reply.url, "the file's size is unknown".into())),
        }
    }

    fn check_sha256(&self, path: &str, listed: &RepoFile, bytes: &[u8]) -> Result<()> {
        let Some(expected) = &listed.lfs_sha256 else { return Ok(()) };
        use sha2::Digest;
        let actual: String = sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
        if &actual != expected {
            return Err(Error::Checksum {
                model: self.name.clone(),
                file: path.to_owned(),
                expected: expected.clone(),
                actual,
            });
        }
        Ok(())
    }

    fn not_found(&self, missing: Missing) -> Error {
        Error::NotFound { model: self.name.clone(), missing }
    }

    fn malformed(&self, what: &str, detail: String) -> Error {
        Error::Malformed { model: self.name.clone(), what: what.to_owned(), detail }
    }

    fn length(&self, url: &str, detail: String) -> Error {
        Error::Length { model: self.name.clone(), url: url.to_owned(), detail }
    }
}

/// `attempt` until it succeeds, fails otherwise than by an interrupted transfer (a network
/// error, or fewer bytes than declared), or has failed [`ATTEMPTS`] times.
fn retried<T>(mut attempt: impl FnMut() -> Result<T>) -> Result<T> {
    let mut failures = 0;
    loop {
        match attempt() {
            Err(Error::Network { .. } | Error::Length { .. }) if failures + 1 < ATTEMPTS => failures += 1,
            other => return other,
        }
    }
}

/// A small range's bytes, the file's size and its ETag.
type RangeBytes = (Vec<u8>, u64, Option<String>);

/// Why a ranged GET did not deliver its bytes.
enum RangeFailure {
    /// The server sent the whole file instead.
    Ignored(Reply),
    /// The transfer stopped early; what arrived is written.
    Interrupted(Error),
}

fn stored_entry(shard: &Shard) -> ManifestFile {
    ManifestFile {
        path: shard.path.clone(),
        source_size: shard.size,
        etag: shard.etag.clone(),
        stored_size: shard.subset.len(),
        tensors: Some(shard.subset.tensors.clone()),
    }
}
