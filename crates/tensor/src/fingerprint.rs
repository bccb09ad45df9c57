//! A content hash of a set of named tensors.

use crate::{Array, Result};
use sha2::{Digest, Sha256};

/// SHA-256 (hex) over the tensors sorted by name: for each, its name, dtype, shape and
/// row-major bytes, each length-prefixed so no two different sets hash alike.
pub fn fingerprint<'a>(tensors: impl IntoIterator<Item = (&'a str, &'a Array)>) -> Result<String> {
    let mut sorted: Vec<(&str, &Array)> = tensors.into_iter().collect();
    sorted.sort_by_key(|(name, _)| *name);
    let mut hasher = Sha256::new();
    hasher.update((sorted.len() as u64).to_le_bytes());
    for (name, array) in sorted {
        hasher.update((name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update(array.dtype().safetensors_name().as_bytes());
        let shape = array.shape();
        hasher.update((shape.len() as u64).to_le_bytes());
        for extent in shape {
            hasher.update(i64::from(extent).to_le_bytes());
        }
        hasher.update((array.nbytes() as u64).to_le_bytes());
        array.with_bytes(|bytes| hasher.update(bytes))?;
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
