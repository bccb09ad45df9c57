//! Copying a response body into a file: exactly the bytes expected, hashed when asked, with
//! progress.

use crate::{Error, Progress, Result};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A file being written, counting (and optionally hashing) what it receives.
#[derive(Debug)]
pub struct Sink {
    file: File,
    path: PathBuf,
    hasher: Option<Sha256>,
    written: u64,
}

impl Sink {
    /// Writes to `file` (at its current position), which is `path`.
    pub fn new(file: File, path: &Path, hash: bool) -> Sink {
        Sink { file, path: path.to_path_buf(), hasher: hash.then(Sha256::new), written: 0 }
    }

    /// Bytes received so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_all(bytes).map_err(|e| Error::io(&self.path, e))?;
        if let Some(hasher) = &mut self.hasher {
            hasher.update(bytes);
        }
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Flushes the file to disk; the SHA-256 of what was written, if hashed.
    pub fn finish(self) -> Result<Option<String>> {
        self.file.sync_all().map_err(|e| Error::io(&self.path, e))?;
        Ok(self.hasher.map(|h| h.finalize().iter().map(|b| format!("{b:02x}")).collect()))
    }
}

/// Copies `body` into `sink`: exactly `expected` bytes. A body that ends early (a dropped
/// connection, a short `Content-Length`) or runs past `expected` is [`Error::Length`] naming
/// `what`; what arrived before stays written (the sink says how much).
pub fn copy_exact(
    model: &str,
    what: &str,
    body: impl Read,
    sink: &mut Sink,
    expected: u64,
    progress: &Progress,
) -> Result<()> {
    let start = sink.written();
    let mut body = body.take(expected.saturating_add(1));
    let mut buffer = vec![0u8; 1 << 16];
    let length = |detail: String| Error::Length { model: model.to_owned(), url: what.to_owned(), detail };
    loop {
        let n = match body.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let got = sink.written() - start;
                return Err(length(format!("the connection failed after {got} of {expected} bytes: {e}")));
            }
        };
        let received = sink.written() - start;
        if received + n as u64 > expected {
            return Err(length(format!("the server sent more than the {expected} bytes expected")));
        }
        sink.write(&buffer[..n])?;
        progress.advance(n as u64);
    }
    let got = sink.written() - start;
    if got < expected {
        return Err(length(format!("the body ended after {got} of {expected} bytes")));
    }
    Ok(())
}
