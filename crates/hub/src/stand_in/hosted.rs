//! What the stand-in hosts: repositories, their branches and commits, each commit's files; the
//! faults it injects; and what it served.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One file of a commit.
#[derive(Debug, Clone)]
pub struct HostedFile {
    pub bytes: Arc<Vec<u8>>,
    /// Stored in LFS: its resolve URL redirects to the content store, as the Hub's does for
    /// weights.
    pub lfs: bool,
}

impl HostedFile {
    /// A file, stored in LFS when it is a `.safetensors` file (as on the Hub).
    pub fn new(path: &str, bytes: Vec<u8>) -> HostedFile {
        HostedFile { lfs: path.ends_with(".safetensors"), bytes: Arc::new(bytes) }
    }

    /// Its SHA-256, lowercase hex.
    pub fn sha256(&self) -> String {
        hex(&Sha256::digest(self.bytes.as_slice()))
    }

    /// Its ETag: the SHA-256 for an LFS file, else a git-blob-like id (40 hex digits).
    pub fn etag(&self) -> String {
        if self.lfs { self.sha256() } else { self.sha256()[..40].to_owned() }
    }
}

/// A repository: branches, and the files of each commit.
#[derive(Debug, Clone, Default)]
pub struct HostedRepo {
    pub branches: BTreeMap<String, String>,
    pub commits: BTreeMap<String, BTreeMap<String, HostedFile>>,
    /// Every request needs this token (a gated or private repository).
    pub token: Option<String>,
}

/// A fault the stand-in injects into the content answers of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answers ranged requests with the whole file (200), as a server without range support.
    IgnoreRange,
    /// The next `times` answers send only `after` bytes of their body, then close the
    /// connection (the headers promise the whole body).
    Drop { after: u64, times: usize },
    /// Every answer's `Content-Length` claims `delta` bytes more (or fewer) than it sends.
    LyingLength { delta: i64 },
    /// Every answer is this status.
    Status(u16),
}

/// One request the stand-in received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub path: String,
    pub range: Option<String>,
    /// Whether it carried an `Authorization` header.
    pub authorized: bool,
}

/// What the stand-in served.
#[derive(Debug, Clone, Default)]
pub struct Served {
    pub requests: Vec<Request>,
    /// File content bytes sent, by repository path (`org/name/file`).
    pub content_bytes: BTreeMap<String, u64>,
}

impl Served {
    /// Every content byte sent.
    pub fn total_content_bytes(&self) -> u64 {
        self.content_bytes.values().sum()
    }

    /// Requests to the metadata route.
    pub fn metadata_requests(&self) -> usize {
        self.requests.iter().filter(|r| r.path.starts_with("/api/")).count()
    }

    /// Requests for file content (resolve or the content store).
    pub fn content_requests(&self) -> usize {
        self.requests.len() - self.metadata_requests()
    }
}

/// A commit id for a set of files: 40 hex digits of their digest.
pub fn commit_id(files: &BTreeMap<String, HostedFile>, salt: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(salt.as_bytes());
    for (path, file) in files {
        hasher.update(path.as_bytes());
        hasher.update(file.sha256().as_bytes());
    }
    hex(&hasher.finalize())[..40].to_owned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
