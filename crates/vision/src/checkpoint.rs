//! A model directory as published: `config.json`, weight files, optional processor config.

use crate::quantization;
use crate::sanitized_store::SanitizedStore;
use crate::{Error, ModelConfig, Result, VisionConfig};
use layers::QuantizationPlan;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tensor::ShardedSafetensors;

/// The index of a sharded checkpoint.
pub const INDEX_FILE: &str = "model.safetensors.index.json";

/// An opened model directory: the validated config, the weight files, a view of its vision
/// tensors, and which of them are quantized.
#[derive(Debug)]
pub struct Checkpoint {
    dir: PathBuf,
    config: ModelConfig,
    index: Option<PathBuf>,
    weight_files: Vec<PathBuf>,
    store: Arc<SanitizedStore>,
    quantization: Arc<QuantizationPlan>,
}

impl Checkpoint {
    /// Reads `dir/config.json` (validated), finds the weight files as mlx-vlm 0.7.10's
    /// `load_model` does ([`Checkpoint::find_weight_files`]), reads their headers, and decides which
    /// vision modules are quantized (see [`QuantizationPlan`]). No tensor data is read.
    ///
    /// A text-only checkpoint (`vision_config: null`, or no vision tensor in any weight file) is
    /// [`Error::NoVisionTower`].
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
        let (index, weight_files) = Checkpoint::find_weight_files(&dir)?;
        let files = Arc::new(ShardedSafetensors::from_files(index.as_deref().unwrap_or(&dir), &weight_files)?);
        if index.is_none()
            && let Some((name, first, second)) = files.shadowed().first()
        {
            return Err(Error::Checkpoint {
                path: dir,
                detail: format!(
                    "`{name}` is in both {} and {}: without an index, which one mlx-vlm reads depends on the \
                     directory's listing order",
                    first.display(),
                    second.display()
                ),
            });
        }
        let clipped = match &config.vision {
            VisionConfig::Siglip(c) => c.use_clipped_linears,
            VisionConfig::Unified(_) => false,
        };
        let family = config.model_type.family();
        let store = Arc::new(SanitizedStore::new(files, family, clipped)?);
        if store.is_empty() {
            return Err(Error::NoVisionTower {
                path: dir,
                detail: format!("no tensor under {} in {}", family.vision_prefixes().join(" or "), list(&weight_files)),
            });
        }
        let plan = quantization::plan(family, config.quantization.as_ref(), config.skip_vision, &store)?;
        Ok(Checkpoint { dir, config, index, weight_files, store, quantization: Arc::new(plan) })
    }

    /// The weight files of `dir`, as mlx-vlm 0.7.10's `load_model` finds them:
    /// - `model.safetensors.index.json`: the shards its `weight_map` names that exist, sorted
    ///   (the index is then returned too);
    /// - otherwise, or when the index names no existing shard or is not readable JSON: every
    ///   `*.safetensors` file of the directory (hidden files excepted, as `glob` skips them) but
    ///   those ending in `consolidated.safetensors`, sorted.
    ///
    /// Every tensor of every file is part of the checkpoint, whether the index lists it or not.
    pub fn find_weight_files(dir: &Path) -> Result<(Option<PathBuf>, Vec<PathBuf>)> {
        let index = dir.join(INDEX_FILE);
        if let Some(shards) = indexed_shards(&index)? {
            let existing: Vec<PathBuf> = shards.into_iter().map(|s| dir.join(s)).filter(|p| p.is_file()).collect();
            if !existing.is_empty() {
                return Ok((Some(index), existing));
            }
        }
        let entries = std::fs::read_dir(dir)
            .map_err(|e| Error::Checkpoint { path: dir.to_path_buf(), detail: format!("cannot list: {e}") })?;
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry
                .map_err(|e| Error::Checkpoint { path: dir.to_path_buf(), detail: format!("cannot list: {e}") })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.ends_with(".safetensors")
                && !name.starts_with('.')
                && !name.ends_with("consolidated.safetensors")
                && path.is_file()
            {
                files.push(path);
            }
        }
        files.sort();
        if files.is_empty() {
            return Err(Error::Checkpoint {
                path: dir.to_path_buf(),
                detail: format!(
                    "no weights: no {INDEX_FILE} naming a shard that exists, and no *.safetensors file \
                     (consolidated.safetensors is not read)"
                ),
            });
        }
        Ok((None, files))
    }

    /// The model directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The validated configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The index the weight files were found through, if any.
    pub fn index_file(&self) -> Option<&Path> {
        self.index.as_deref()
    }

    /// The weight files read, sorted.
    pub fn weight_files(&self) -> &[PathBuf] {
        &self.weight_files
    }

    /// The vision tensors under their sanitized names.
    pub fn store(&self) -> Arc<SanitizedStore> {
        Arc::clone(&self.store)
    }

    /// The quantized vision modules and their parameters.
    pub fn quantization(&self) -> Arc<QuantizationPlan> {
        Arc::clone(&self.quantization)
    }

    /// A weight error with the files it concerns: the file holding the tensor for a shape or
    /// dtype error, every weight file for a missing one. Other errors pass unchanged.
    pub fn locate(&self, error: Error) -> Error {
        let name = match &error {
            Error::Layers(
                layers::Error::Missing { name } | layers::Error::Shape { name, .. } | layers::Error::Dtype { name, .. },
            ) => name.clone(),
            _ => return error,
        };
        let Error::Layers(source) = error else { return error };
        let files = match self.store.file_of(&name) {
            Some(file) => vec![file.to_path_buf()],
            None => self.weight_files.clone(),
        };
        Error::Weight { files, source }
    }
}

/// The shard names of an index, sorted and deduplicated; `None` when there is no index or it
/// is not readable JSON (the reference then falls back to the directory's files).
fn indexed_shards(index: &Path) -> Result<Option<Vec<String>>> {
    let Ok(text) = std::fs::read_to_string(index) else { return Ok(None) };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else { return Ok(None) };
    let invalid = |detail: String| Error::Checkpoint { path: index.to_path_buf(), detail };
    let map = match json.get("weight_map") {
        None | Some(serde_json::Value::Null) => return Ok(Some(Vec::new())),
        Some(serde_json::Value::Object(map)) => map,
        Some(_) => return Err(invalid("`weight_map` is not an object".into())),
    };
    let mut shards = std::collections::BTreeSet::new();
    for (name, shard) in map {
        let shard = shard
            .as_str()
            .filter(|s| !s.is_empty() && !s.contains('/') && !s.contains('\\') && *s != ".." && *s != ".")
            .ok_or_else(|| invalid(format!("`weight_map.{name}` is not a shard file name")))?;
        shards.insert(shard.to_owned());
    }
    Ok(Some(shards.into_iter().collect()))
}

fn list(files: &[PathBuf]) -> String {
    files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
}
