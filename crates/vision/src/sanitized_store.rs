//! The vision tensors of a checkpoint under the reference's sanitized key names.

use crate::{Error, Family, Result};
use layers::WeightStore;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use tensor::{Array, ShardedSafetensors, TensorInfo};

/// A [`WeightStore`] exposing only a checkpoint's vision tensors (under the family's
/// [`vision_prefixes`](Family::vision_prefixes)), under the names mlx-vlm's `Model.sanitize`
/// gives them: a leading `model.` is stripped (raw Hugging Face names and already-converted MLX
/// names both load), `rotary_emb` tensors are dropped, and so is what the family's own rules
/// drop ([`Family::drops_tensor`]: gemma4's unused clip bounds). Nothing outside the vision
/// prefixes is listed or read, so a large checkpoint's language model is never touched.
#[derive(Debug)]
pub struct SanitizedStore {
    files: Arc<ShardedSafetensors>,
    /// Sanitized name → name in the files.
    names: BTreeMap<String, String>,
}

impl SanitizedStore {
    /// The vision view of `files`. Fails if two stored names sanitize to the same key.
    pub fn new(
        files: Arc<ShardedSafetensors>,
        family: &dyn Family,
        use_clipped_linears: bool,
    ) -> Result<SanitizedStore> {
        let prefixes = family.vision_prefixes();
        let mut names = BTreeMap::new();
        for raw in files.names() {
            let Some(key) = sanitize(raw, family, use_clipped_linears) else { continue };
            if !prefixes.iter().any(|p| key.starts_with(p)) {
                continue;
            }
            if let Some(previous) = names.insert(key.clone(), raw.to_owned()) {
                return Err(Error::DuplicateTensor { name: key, first: previous, second: raw.to_owned() });
            }
        }
        Ok(SanitizedStore { files, names })
    }

    /// Whether the checkpoint holds no vision tensor at all.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The weight files behind the view (every tensor of the checkpoint, vision or not).
    pub fn files(&self) -> &ShardedSafetensors {
        &self.files
    }

    /// The name a vision tensor has in the files (`model.`-prefixed for raw checkpoints).
    pub fn stored_name(&self, name: &str) -> Option<&str> {
        self.names.get(name).map(String::as_str)
    }

    /// The file holding the vision tensor `name`.
    pub fn file_of(&self, name: &str) -> Option<&Path> {
        self.files.file_of(self.stored_name(name)?)
    }

    fn raw(&self, name: &str) -> layers::Result<&str> {
        self.names.get(name).map(String::as_str).ok_or_else(|| layers::Error::Missing { name: name.to_owned() })
    }
}

/// mlx-vlm's sanitize rules for one key (gemma4 `Model.sanitize` and gemma4_unified
/// `Model.sanitize`, vision-relevant parts); `None` when the key is dropped.
fn sanitize(key: &str, family: &dyn Family, use_clipped_linears: bool) -> Option<String> {
    if key.contains("rotary_emb") || family.drops_tensor(key, use_clipped_linears) {
        return None;
    }
    Some(key.strip_prefix("model.").unwrap_or(key).to_owned())
}

impl WeightStore for SanitizedStore {
    fn names(&self) -> Vec<String> {
        self.names.keys().cloned().collect()
    }

    fn contains(&self, name: &str) -> bool {
        self.names.contains_key(name)
    }

    fn info(&self, name: &str) -> layers::Result<TensorInfo> {
        Ok(self.files.info(self.raw(name)?)?)
    }

    fn load(&self, name: &str) -> layers::Result<Array> {
        Ok(self.files.load(self.raw(name)?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ModelType;

    #[test]
    fn sanitize_follows_the_reference_rules() {
        let g = ModelType::Gemma4.family();
        assert_eq!(sanitize("model.vision_tower.x.weight", g, false).as_deref(), Some("vision_tower.x.weight"));
        assert_eq!(sanitize("vision_tower.x.weight", g, false).as_deref(), Some("vision_tower.x.weight"));
        assert_eq!(sanitize("model.vision_tower.a.q_proj.input_min", g, false), None);
        assert_eq!(
            sanitize("model.vision_tower.a.q_proj.input_min", g, true).as_deref(),
            Some("vision_tower.a.q_proj.input_min")
        );
        assert_eq!(sanitize("model.embed_vision.output_max", g, true), None);
        assert_eq!(sanitize("model.language_model.rotary_emb.inv_freq", g, true), None);
        let u = ModelType::Gemma4Unified.family();
        assert_eq!(
            sanitize("model.vision_embedder.patch_ln1.weight", u, false).as_deref(),
            Some("vision_embedder.patch_ln1.weight")
        );
    }
}
