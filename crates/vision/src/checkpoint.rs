//! A model directory as published: `config.json`, weights, optional `processor_config.json`.

use crate::sanitized_store::SanitizedStore;
use crate::{Error, ModelConfig, Result, VisionConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tensor::ShardedSafetensors;

/// Weight files looked for, in order: a sharded checkpoint's index, a single file, and the
/// vision-only sidecar some converted checkpoints ship.
pub const WEIGHT_FILES: [&str; 3] = ["model.safetensors.index.json", "model.safetensors", "optiq_vision.safetensors"];

/// An opened model directory: the validated config and a view of its vision tensors.
#[derive(Debug)]
pub struct Checkpoint {
    dir: PathBuf,
    config: ModelConfig,
    weights_file: PathBuf,
    store: Arc<SanitizedStore>,
}

impl Checkpoint {
    /// Reads `dir/config.json` (validated) and opens the weights (headers only).
    pub fn open(dir: impl AsRef<Path>) -> Result<Checkpoint> {
        let dir = dir.as_ref().to_path_buf();
        if !dir.is_dir() {
            return Err(Error::Checkpoint { path: dir, detail: "not a directory".into() });
        }
        let config_path = dir.join("config.json");
        if !config_path.is_file() {
            return Err(Error::Checkpoint { path: config_path, detail: "missing".into() });
        }
        let config = ModelConfig::load(&config_path)?;
        let weights_file = WEIGHT_FILES.iter().map(|name| dir.join(name)).find(|p| p.is_file()).ok_or_else(|| {
            Error::Checkpoint { path: dir.clone(), detail: format!("no weights: none of {}", WEIGHT_FILES.join(", ")) }
        })?;
        let files = Arc::new(ShardedSafetensors::open(&weights_file)?);
        let clipped = match &config.vision {
            VisionConfig::Siglip(c) => c.use_clipped_linears,
            VisionConfig::Unified(_) => false,
        };
        let store = Arc::new(SanitizedStore::new(files, config.model_type, clipped)?);
        Ok(Checkpoint { dir, config, weights_file, store })
    }

    /// The model directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The validated configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The weight file or index the tensors come from.
    pub fn weights_file(&self) -> &Path {
        &self.weights_file
    }

    /// The vision tensors under their sanitized names.
    pub fn store(&self) -> Arc<SanitizedStore> {
        Arc::clone(&self.store)
    }

    /// `processor_config.json`, if the directory has one.
    pub fn processor_config_path(&self) -> Option<PathBuf> {
        Some(self.dir.join("processor_config.json")).filter(|p| p.is_file())
    }
}
