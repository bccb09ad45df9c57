//! [`CacheIdentity`]: what an encoder computes, as one hash that keys a feature cache.

use crate::{Error, Result, VisionEncoder};
use layers::WeightStore;
use sha2::{Digest, Sha256};

/// What an encoder computes, as one hash: the key of a feature cache (the `embed` shards, the
/// Python package's cache).
pub trait CacheIdentity {
    /// SHA-256 (hex) identifying what this encoder computes: the parsed model config, the
    /// processor settings, the options that change the features (compute dtype, the embed-scale
    /// division), the MLX release, and the fingerprint of every vision tensor it loaded (names,
    /// dtypes, shapes, bytes as stored). Equal identities give equal features for equal image
    /// bytes and budgets, so it keys a feature cache. Each part is written under an explicit
    /// name ([`identity_parts`](Self::identity_parts)), never a type's debug form, so renaming
    /// a Rust item changes no identity. Computed once (it reads the weights).
    fn cache_identity(&self) -> Result<String>;

    /// The parts [`cache_identity`](Self::cache_identity) hashes, in order, each `name value`.
    /// Who runs the ops is left out: every choice gives the same bits.
    fn identity_parts(&self) -> Result<Vec<String>>;
}

impl CacheIdentity for VisionEncoder {
    fn cache_identity(&self) -> Result<String> {
        let mut cached = self.identity.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(identity) = cached.as_ref() {
            return Ok(identity.clone());
        }
        let mut hasher = Sha256::new();
        for part in self.identity_parts()? {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        let identity: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
        *cached = Some(identity.clone());
        Ok(identity)
    }

    fn identity_parts(&self) -> Result<Vec<String>> {
        let store = self.checkpoint().store();
        let tensors = self
            .used_keys()
            .iter()
            .map(|key| Ok((key.as_str(), store.load(key)?)))
            .collect::<layers::Result<Vec<_>>>()?;
        let fingerprint = tensor::fingerprint(tensors.iter().map(|(k, a)| (*k, a)))?;
        let processor = serde_json::to_string(self.processor_config()).map_err(|e| Error::input(e.to_string()))?;
        let options = self.options();
        Ok(vec![
            "format gemma-vision/3".to_owned(),
            format!("config {}", self.config().canonical_json()),
            format!("processor {processor}"),
            format!("compute_dtype {}", options.compute_dtype.as_str()),
            format!("divide_by_embed_scale {}", options.divide_by_embed_scale),
            format!("mlx {}", tensor::info::mlx_build_version()),
            format!("weights {fingerprint}"),
        ])
    }
}
