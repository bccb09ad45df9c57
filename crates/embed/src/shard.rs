//! The shard files of an `embed` job: writing them atomically, reading their headers back.
//!
//! A shard, `shard-NNNNNN.safetensors`, is a safetensors file holding:
//! - `soft_tokens`: I32 `[N]`, the soft tokens of each image in row order;
//! - `features`: `[Σ soft_tokens, text_hidden]` in the encoder's dtype (BF16 or F32): the
//!   images' soft tokens one after the other, each exactly what `gemma-vision encode` writes for
//!   that image alone;
//! - metadata (strings): `format` ([`FORMAT`]), `model_identity` (the encoder's cache identity),
//!   `max_soft_tokens` (the budget), `images` (a JSON array, one [`ImageRow`] per image in row
//!   order) and `errors` (a JSON array of [`ErrorRow`]: the images that could not be read).
//!
//! A shard in which every image failed has no tensors, only its metadata. Shards are written
//! and read through `tensor`'s safetensors codec ([`tensor::write_safetensors`],
//! [`tensor::read_safetensors_header`]).

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use tensor::{Dtype, TensorBytes};
use vision::SoftTokenBudget;

/// The `format` metadata value of the shards this version writes.
pub const FORMAT: &str = "gemma-vision-embed/1";

/// Shards stop growing at this many bytes of features, whatever `--shard-size` says.
pub const MAX_SHARD_FEATURE_BYTES: usize = 256 << 20;

/// One encoded image of a shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRow {
    /// The image's path as listed by the job's source.
    pub path: String,
    /// Its soft tokens: its rows of `features`.
    pub soft_tokens: usize,
    /// The decoded image's height and width in pixels (after its EXIF orientation).
    pub height: u32,
    pub width: u32,
    /// The soft-token budget it was encoded with.
    pub budget: SoftTokenBudget,
}

/// One image that could not be embedded: its path as listed, what kind of failure it was and
/// the message saying why (for a file that cannot be read or decoded, the message
/// `gemma-vision encode` prints for it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorRow {
    pub path: String,
    /// Recorded as a snake_case word (`"unknown_format"`, `"timeout"`, …); rows of shards
    /// written before kinds were recorded read as [`FailureKind::Other`].
    #[serde(default)]
    pub kind: FailureKind,
    pub error: String,
}

/// Why an image was not embedded. Every kind is a property of the file (its bytes, its size, or
/// what the encoder makes of it alone), so a rerun skips the image rather than trying it again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The file could not be read (missing, a directory, no permission, an I/O error).
    Unreadable,
    /// The bytes are of no image format Pillow identifies (an empty file included).
    UnknownFormat,
    /// A format Pillow identifies but `preprocess` does not read, or a variant of a read format
    /// it does not (a bit depth, a compression).
    UnsupportedFormat,
    /// Malformed or truncated image data, or a zero-size image.
    Malformed,
    /// More pixels than the job's [`Limits`](preprocess::Limits) allow, or a file longer than
    /// an image of that many pixels: refused before the pixels are allocated.
    TooLarge,
    /// A decoder panicked on the bytes (caught by `preprocess`).
    DecoderPanic,
    /// Something else in the image's path (orientation, resize, preparation, encoding)
    /// panicked; the panic was caught at the image's boundary.
    Panic,
    /// Reading and decoding the file took longer than the job's per-file bound.
    Timeout,
    /// The decoded image could not be prepared for the encoder (a size its budget cannot
    /// serve).
    Prepare,
    /// The encoder failed on this image alone (its batch was retried image by image).
    Encode,
    /// A row of a shard written before kinds were recorded.
    #[default]
    Other,
}

/// The file name of shard number `n`.
pub fn shard_name(n: u64) -> String {
    format!("shard-{n:06}.safetensors")
}

/// The shard number of a file name written by [`shard_name`].
pub fn shard_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("shard-")?.strip_suffix(".safetensors")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What every shard of a job states about its encoder.
#[derive(Debug, Clone)]
pub struct JobFacts {
    pub identity: String,
    pub budget: SoftTokenBudget,
    /// Columns of `features` (the language model's hidden size).
    pub hidden: usize,
}

/// Collects encoded images and failures and writes them out as shards of at most `shard_size`
/// entries (images plus failures) and [`MAX_SHARD_FEATURE_BYTES`] bytes of features. Each shard
/// is written to a temporary file renamed into place ([`tensor::write_atomically`]): a shard on
/// disk is complete, and whatever was not yet written is lost to a kill, never half-written.
#[derive(Debug)]
pub struct ShardWriter {
    dir: PathBuf,
    facts: JobFacts,
    shard_size: usize,
    next: u64,
    dtype: Option<Dtype>,
    images: Vec<ImageRow>,
    errors: Vec<ErrorRow>,
    features: Vec<u8>,
    /// Every failure written by this writer, for the job's errors file.
    written_errors: Vec<ErrorRow>,
    shards_written: usize,
}

impl ShardWriter {
    /// A writer whose first shard is number `first`.
    pub fn new(dir: &Path, facts: JobFacts, shard_size: NonZeroUsize, first: u64) -> ShardWriter {
        ShardWriter {
            dir: dir.to_path_buf(),
            facts,
            shard_size: shard_size.get(),
            next: first,
            dtype: None,
            images: Vec::new(),
            errors: Vec::new(),
            features: Vec::new(),
            written_errors: Vec::new(),
            shards_written: 0,
        }
    }

    /// Adds an encoded image: `features` are its rows, `row.soft_tokens × hidden` elements of
    /// `dtype`, row-major.
    pub fn push_image(&mut self, row: ImageRow, dtype: Dtype, features: &[u8]) -> Result<()> {
        let expected = row.soft_tokens * self.facts.hidden * dtype.size();
        if features.len() != expected {
            return Err(Error::Features(format!(
                "{}: {} bytes of features for {} soft tokens of {} {dtype} values",
                row.path,
                features.len(),
                row.soft_tokens,
                self.facts.hidden
            )));
        }
        match self.dtype {
            Some(known) if known != dtype => {
                return Err(Error::Features(format!("features of dtype {dtype} after features of dtype {known}")));
            }
            _ => self.dtype = Some(dtype),
        }
        self.features.extend_from_slice(features);
        self.images.push(row);
        self.flush_when_full()
    }

    /// Adds an image that could not be read or prepared.
    pub fn push_error(&mut self, row: ErrorRow) -> Result<()> {
        self.errors.push(row);
        self.flush_when_full()
    }

    /// Writes what is left and returns the failures written by this writer and the number of
    /// shards it wrote.
    pub fn finish(mut self) -> Result<(Vec<ErrorRow>, usize)> {
        self.flush()?;
        Ok((self.written_errors, self.shards_written))
    }

    fn flush_when_full(&mut self) -> Result<()> {
        if self.images.len() + self.errors.len() >= self.shard_size || self.features.len() >= MAX_SHARD_FEATURE_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.images.is_empty() && self.errors.is_empty() {
            return Ok(());
        }
        let path = self.dir.join(shard_name(self.next));
        let mut metadata = BTreeMap::new();
        metadata.insert("format".to_owned(), FORMAT.to_owned());
        metadata.insert("model_identity".to_owned(), self.facts.identity.clone());
        metadata.insert("max_soft_tokens".to_owned(), self.facts.budget.to_string());
        metadata.insert("images".to_owned(), json(&self.images)?);
        metadata.insert("errors".to_owned(), json(&self.errors)?);
        let counts: Vec<u8> = self.images.iter().flat_map(|row| (row.soft_tokens as i32).to_le_bytes()).collect();
        let count_shape = [self.images.len()];
        let feature_shape = [self.images.iter().map(|row| row.soft_tokens).sum(), self.facts.hidden];
        let tensors = match (self.images.is_empty(), self.dtype) {
            (false, Some(dtype)) => vec![
                TensorBytes { name: "soft_tokens", dtype: Dtype::I32, shape: &count_shape, data: &counts },
                TensorBytes { name: "features", dtype, shape: &feature_shape, data: &self.features },
            ],
            _ => Vec::new(),
        };
        tensor::write_safetensors(&path, &tensors, &metadata)?;
        self.next += 1;
        self.shards_written += 1;
        self.written_errors.append(&mut self.errors);
        self.images.clear();
        self.features.clear();
        Ok(())
    }
}

fn json(value: &impl Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Features(e.to_string()))
}

/// What a shard's header says: its metadata.
#[derive(Debug)]
pub struct ShardHeader {
    pub format: String,
    pub identity: String,
    pub budget: Option<SoftTokenBudget>,
    pub images: Vec<ImageRow>,
    pub errors: Vec<ErrorRow>,
}

/// Reads a shard's header (not its data): the file must be a complete safetensors file, and its
/// metadata rows must parse.
pub fn read_shard_header(path: &Path) -> Result<ShardHeader> {
    let header = tensor::read_safetensors_header(path).map_err(|e| match e {
        tensor::Error::Format { detail, .. } => Error::shard(path, format!("not a complete shard: {detail}")),
        other => Error::Tensor(other),
    })?;
    let text = |key: &str| header.metadata.get(key).map(String::as_str).unwrap_or_default();
    Ok(ShardHeader {
        format: text("format").to_owned(),
        identity: text("model_identity").to_owned(),
        budget: text("max_soft_tokens").parse().ok(),
        images: rows(text("images")).map_err(|e| Error::shard(path, format!("metadata `images`: {e}")))?,
        errors: rows(text("errors")).map_err(|e| Error::shard(path, format!("metadata `errors`: {e}")))?,
    })
}

/// The rows of a JSON array (none for an empty string).
fn rows<T: serde::de::DeserializeOwned>(json: &str) -> serde_json::Result<Vec<T>> {
    if json.is_empty() { Ok(Vec::new()) } else { serde_json::from_str(json) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_rows_record_their_kind_and_rows_without_one_read_as_other() {
        let row = ErrorRow { path: "a".into(), kind: FailureKind::DecoderPanic, error: "x".into() };
        assert_eq!(serde_json::to_string(&row).unwrap(), r#"{"path":"a","kind":"decoder_panic","error":"x"}"#);
        let old: ErrorRow = serde_json::from_str(r#"{"path":"a","error":"x"}"#).unwrap();
        assert_eq!(old.kind, FailureKind::Other);
    }

    fn six() -> SoftTokenBudget {
        SoftTokenBudget::new(6).unwrap()
    }

    fn facts() -> JobFacts {
        JobFacts { identity: "abc".into(), budget: six(), hidden: 2 }
    }

    fn row(path: &str, soft_tokens: usize) -> ImageRow {
        ImageRow { path: path.into(), soft_tokens, height: 3, width: 4, budget: six() }
    }

    #[test]
    fn names_round_trip() {
        assert_eq!(shard_name(7), "shard-000007.safetensors");
        assert_eq!(shard_number(&shard_name(1_234_567)), Some(1_234_567));
        for other in
            ["shard-.safetensors", "shard-01a.safetensors", "errors.jsonl", ".shard-000001.safetensors.1-0.partial"]
        {
            assert_eq!(shard_number(other), None, "{other}");
        }
    }

    #[test]
    fn shards_are_cut_at_the_shard_size_and_read_back() {
        let dir = tensor::testing::TestDir::new("embed-shard");
        let mut writer = ShardWriter::new(&dir, facts(), NonZeroUsize::new(2).unwrap(), 5);
        writer.push_image(row("a", 1), Dtype::F32, &[0; 8]).unwrap();
        writer.push_error(ErrorRow { path: "b".into(), kind: FailureKind::Malformed, error: "bad".into() }).unwrap();
        writer.push_image(row("c", 2), Dtype::F32, &[1; 16]).unwrap();
        assert!(writer.push_image(row("d", 1), Dtype::Bf16, &[0; 4]).unwrap_err().to_string().contains("dtype"));
        let short = writer.push_image(row("d", 1), Dtype::F32, &[0; 4]).unwrap_err();
        assert!(short.to_string().contains("bytes of features"));
        let (errors, shards) = writer.finish().unwrap();
        assert_eq!((errors.len(), shards), (1, 2));
        let first = read_shard_header(&dir.join(shard_name(5))).unwrap();
        assert_eq!((first.format.as_str(), first.identity.as_str(), first.budget), (FORMAT, "abc", Some(six())));
        assert_eq!(first.images, [row("a", 1)]);
        assert_eq!(first.errors, [ErrorRow { path: "b".into(), kind: FailureKind::Malformed, error: "bad".into() }]);
        let second = read_shard_header(&dir.join(shard_name(6))).unwrap();
        assert_eq!((second.images, second.errors), (vec![row("c", 2)], vec![]));
        let bytes = std::fs::read(dir.join(shard_name(6))).unwrap();
        let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(file.tensor("features").unwrap().shape(), [2, 2]);
        assert_eq!(file.tensor("features").unwrap().data(), [1; 16]);
        assert_eq!(file.tensor("soft_tokens").unwrap().data(), 2i32.to_le_bytes());
        std::fs::write(dir.join("cut.safetensors"), &bytes[..bytes.len() - 1]).unwrap();
        let cut = read_shard_header(&dir.join("cut.safetensors")).unwrap_err();
        assert!(matches!(cut, Error::Shard { .. }) && cut.to_string().contains("not a complete shard"), "{cut}");
    }
}
