//! What an output directory already holds: the resume index of an `embed` job.

use crate::shard::{self, ErrorRow};
use crate::{Error, Result};
use std::collections::HashSet;
use std::fs;
use std::path::Path;
use vision::SoftTokenBudget;

/// The name of the errors file in the output directory: one JSON object per line,
/// `{"path": …, "kind": …, "error": …}` ([`ErrorRow`]), for every image of every shard that
/// could not be embedded.
pub const ERRORS_FILE: &str = "errors.jsonl";

/// The images recorded in an output directory's complete shards.
#[derive(Debug, Default)]
pub struct Index {
    /// Paths (as recorded) of the images encoded or failed in a shard.
    done: HashSet<String>,
    /// The failures recorded so far, in shard order.
    pub errors: Vec<ErrorRow>,
    /// Images encoded so far.
    pub encoded: usize,
    /// The number after the highest shard number present (0 when there is none).
    pub next_shard: u64,
}

impl Index {
    /// Reads the headers of the shards in `dir` (which may not exist yet) and removes the
    /// temporary files a killed run left behind. Fails when a shard was written by another
    /// encoder (`identity`) or with another budget, or is not a complete shard: mixing them
    /// would make the output mean two things.
    pub fn read(dir: &Path, identity: &str, budget: SoftTokenBudget) -> Result<Index> {
        let mut index = Index::default();
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(index),
            Err(e) => return Err(Error::io(dir, e)),
        };
        let mut shards = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(n) = shard::shard_number(&name) {
                shards.push((n, entry.path()));
            } else if is_leftover(&name) {
                fs::remove_file(entry.path()).map_err(|e| Error::io(entry.path(), e))?;
            }
        }
        shards.sort();
        for (n, path) in shards {
            let header = shard::read_shard_header(&path)?;
            if header.format != shard::FORMAT {
                return Err(Error::shard(&path, format!("format `{}`, expected `{}`", header.format, shard::FORMAT)));
            }
            if header.identity != identity {
                return Err(Error::shard(
                    &path,
                    format!(
                        "holds features of another encoder (model identity {}, this job's {identity}): write into \
                         another output directory",
                        header.identity
                    ),
                ));
            }
            if header.budget != Some(budget) {
                let theirs = header.budget.map_or("none".to_owned(), |b| b.to_string());
                return Err(Error::shard(
                    &path,
                    format!(
                        "was written with a budget of {theirs} soft tokens, this job's is {budget}: write into \
                         another output directory"
                    ),
                ));
            }
            index.encoded += header.images.len();
            index.done.extend(header.images.into_iter().map(|row| row.path));
            index.done.extend(header.errors.iter().map(|row| row.path.clone()));
            index.errors.extend(header.errors);
            index.next_shard = index.next_shard.max(n + 1);
        }
        Ok(index)
    }

    /// Whether the image recorded as `path` is in a shard (encoded or failed).
    pub fn contains(&self, path: &str) -> bool {
        self.done.contains(path)
    }
}

/// A temporary file of [`tensor::write_atomically`] for a shard or the errors file.
fn is_leftover(name: &str) -> bool {
    name.ends_with(".partial") && (name.starts_with(".shard-") || name.starts_with(&format!(".{ERRORS_FILE}.")))
}

/// Writes the errors file (atomically): `errors`, one JSON object per line.
pub fn write_errors(dir: &Path, errors: &[ErrorRow]) -> Result<()> {
    let mut text = String::new();
    for row in errors {
        text.push_str(&serde_json::to_string(row).map_err(|e| Error::Features(e.to_string()))?);
        text.push('\n');
    }
    Ok(tensor::write_atomically(dir.join(ERRORS_FILE), |file| std::io::Write::write_all(file, text.as_bytes()))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_are_the_temporary_files_of_shards_and_the_errors_file() {
        assert!(is_leftover(".shard-000003.safetensors.123-0.partial"));
        assert!(is_leftover(".errors.jsonl.123-4.partial"));
        assert!(!is_leftover("shard-000003.safetensors"));
        assert!(!is_leftover(".other.partial"));
    }
}
