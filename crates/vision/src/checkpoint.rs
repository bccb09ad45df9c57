//! A model directory as published: `config.json`, weight files, optional processor config;
//! found from a [`ModelSource`] (a directory, or a Hub repository by name).

use crate::model_source::encoder_selection;
use crate::quantization;
use crate::sanitized_store::SanitizedStore;
use crate::{Error, ModelConfig, Result, VisionConfig};
use hub::{HubEnvironment, ModelSource, Origin};
use layers::QuantizationPlan;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tensor::ShardedSafetensors;

pub use hub::INDEX_FILE;

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
    origin: Origin,
}

impl Checkpoint {
    /// Finds `source` on this machine and opens it ([`Checkpoint::open`]): a directory as it
    /// is; a Hub repository (`org/name@revision`) from a complete snapshot in the Hugging Face
    /// cache, else from what was fetched before, else by fetching only what the encoders read
    /// ([`encoder_selection`]: the configs, the index, each shard's header and the vision
    /// tensors' bytes); see [`hub::resolve_hub`]. `environment` gives the endpoint, caches,
    /// token and offline mode; `None` reads them from this process's variables
    /// ([`HubEnvironment::from_env`]).
    pub fn resolve(source: &ModelSource, environment: Option<&HubEnvironment>) -> Result<Checkpoint> {
        let resolved = match (source, environment) {
            (ModelSource::Directory(dir), _) => return Checkpoint::open(dir),
            (ModelSource::Hub(model), Some(environment)) => hub::resolve_hub(model, &encoder_selection(), environment)?,
            (ModelSource::Hub(model), None) => {
                hub::resolve_hub(model, &encoder_selection(), &HubEnvironment::from_env()?)?
            }
        };
        let mut checkpoint = Checkpoint::open(&resolved.dir)?;
        checkpoint.origin = resolved.origin;
        Ok(checkpoint)
    }

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
        let quantization = Arc::new(plan);
        Ok(Checkpoint { dir, config, index, weight_files, store, quantization, origin: Origin::Directory })
    }

    /// The weight files of `dir`, as mlx-vlm 0.7.10's `load_model` finds them
    /// ([`hub::weight_files`]): the shards the index (`model.safetensors.index.json`) names that
    /// exist, sorted (the index is then returned too); otherwise, or when the index names no
    /// existing shard or is not readable JSON, every `*.safetensors` file of the directory
    /// (hidden files excepted, as `glob` skips them) but those ending in
    /// `consolidated.safetensors`, sorted.
    ///
    /// Every tensor of every file is part of the checkpoint, whether the index lists it or not.
    pub fn find_weight_files(dir: &Path) -> Result<(Option<PathBuf>, Vec<PathBuf>)> {
        let index = dir.join(INDEX_FILE);
        let indexed = match std::fs::read(&index) {
            Ok(text) => {
                hub::indexed_shards(&text).map_err(|detail| Error::Checkpoint { path: index.clone(), detail })?
            }
            Err(_) => None,
        };
        let cannot_list =
            |e: std::io::Error| Error::Checkpoint { path: dir.to_path_buf(), detail: format!("cannot list: {e}") };
        let mut present = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(cannot_list)? {
            let entry = entry.map_err(cannot_list)?;
            if entry.path().is_file()
                && let Ok(name) = entry.file_name().into_string()
            {
                present.push(name);
            }
        }
        let files = hub::weight_files(indexed.as_ref(), present.iter().map(String::as_str));
        let Some(first) = files.first() else {
            return Err(Error::Checkpoint {
                path: dir.to_path_buf(),
                detail: format!(
                    "no weights: no {INDEX_FILE} naming a shard that exists, and no *.safetensors file \
                     (consolidated.safetensors is not read)"
                ),
            });
        };
        let through_index = indexed.as_ref().is_some_and(|shards| shards.contains(first));
        Ok((through_index.then_some(index), files.iter().map(|f| dir.join(f)).collect()))
    }

    /// The model directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the directory came from: a directory named as such, the Hugging Face cache, or
    /// the store of what was fetched by name (with what was fetched).
    pub fn origin(&self) -> &Origin {
        &self.origin
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

fn list(files: &[PathBuf]) -> String {
    files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
}
