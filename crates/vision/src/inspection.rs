//! [`Inspection`]: what a loaded encoder is, and why an image gives the soft tokens it gives.

use crate::{CacheIdentity, Error, ModelType, Result, VisionConfig, VisionEncoder};
use layers::WeightStore;
use preprocess::BudgetSource;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The facts about a checkpoint as an encoder loaded it: its model and dimensions, the
/// features it produces, its quantized modules, the soft-token budget and where that came
/// from, the tensors it read and those it ignored, its cache identity, and the MLX it runs on.
///
/// Serialisable (`serde`), so every front end (the `gemma-vision inspect` command, the Python
/// package) reports the same facts under the same names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inspection {
    /// The model directory.
    pub model_dir: PathBuf,
    /// Where the directory came from.
    pub origin: ModelOrigin,
    /// `gemma4` or `gemma4_unified`.
    pub model_type: ModelType,
    /// The vision configuration as parsed (the reference's defaults filled in).
    pub vision: VisionConfig,
    /// Width of every soft token: the language model's `text_config.hidden_size`.
    pub feature_width: i32,
    /// The features' dtype (`"bfloat16"`, `"float32"`), as an encode with these options
    /// returns it.
    pub feature_dtype: String,
    /// The compute dtype the encoder was loaded with (`"native"` or `"f32"`).
    pub compute_dtype: crate::ComputeDtype,
    /// The index the weight files were found through, if any.
    pub index_file: Option<PathBuf>,
    /// The weight files read, sorted.
    pub weight_files: Vec<PathBuf>,
    /// Every quantized vision module, sorted by path.
    pub quantized_modules: Vec<QuantizedModule>,
    /// The soft-token budget per image and where it came from.
    pub budget: Budget,
    /// What an image of the given size becomes, when a size was given.
    pub image: Option<ImagePlan>,
    /// Tensors of the weight files read and ignored.
    pub tensors: TensorCounts,
    /// [`CacheIdentity::cache_identity`].
    pub cache_identity: String,
    /// The MLX the encoder runs on.
    pub mlx: MlxLibrary,
    /// Who runs the encoder's ops (the host kernels or MLX's own), and why.
    pub kernels: String,
}

/// Where a loaded checkpoint's directory came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelOrigin {
    /// A directory named as such.
    Directory,
    /// A complete snapshot in the Hugging Face cache, used in place.
    HuggingFaceCache { repo: String, commit: String },
    /// A vision-only checkpoint fetched by name (now or before): `fetched_bytes` of the
    /// checkpoint's `checkpoint_bytes` (every file of the revision).
    Fetched { repo: String, commit: String, fetched_bytes: u64, checkpoint_bytes: u64, tensors: usize },
}

impl From<&hub::Origin> for ModelOrigin {
    fn from(origin: &hub::Origin) -> ModelOrigin {
        match origin {
            hub::Origin::Directory => ModelOrigin::Directory,
            hub::Origin::HfCache { repo, commit } => {
                ModelOrigin::HuggingFaceCache { repo: repo.to_string(), commit: commit.to_string() }
            }
            hub::Origin::Store { repo, commit, manifest, .. } => ModelOrigin::Fetched {
                repo: repo.to_string(),
                commit: commit.to_string(),
                fetched_bytes: manifest.fetched_bytes,
                checkpoint_bytes: manifest.checkpoint_bytes,
                tensors: manifest.tensor_count(),
            },
        }
    }
}

impl std::fmt::Display for ModelOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelOrigin::Directory => f.write_str("a local directory"),
            ModelOrigin::HuggingFaceCache { repo, commit } => write!(f, "{repo}@{commit} (the Hugging Face cache)"),
            ModelOrigin::Fetched { repo, commit, fetched_bytes, checkpoint_bytes, tensors } => write!(
                f,
                "{repo}@{commit} (vision only: {tensors} tensors, {fetched_bytes} of the checkpoint's {checkpoint_bytes} bytes fetched)"
            ),
        }
    }
}

/// The MLX library a process runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MlxLibrary {
    /// libmlx's own version (`mlx::core::version()`).
    pub version: String,
    /// The libmlx file opened.
    pub library: PathBuf,
}

impl MlxLibrary {
    /// The MLX this process opened (opening it if nothing has yet).
    pub fn current() -> Result<MlxLibrary> {
        Ok(MlxLibrary { version: tensor::info::mlx_version()?, library: tensor::info::mlx_library()? })
    }
}

/// One quantized module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QuantizedModule {
    /// The module path, e.g. `embed_vision.embedding_projection`.
    pub module: String,
    /// `affine`, `mxfp4`, `nvfp4` or `mxfp8`.
    pub mode: String,
    pub bits: usize,
    pub group_size: usize,
}

/// The soft-token budget per image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Budget {
    pub max_soft_tokens: u32,
    /// Where the value came from.
    pub source: BudgetSource,
    /// `max_soft_tokens · pooling_kernel_size²`: the patch budget of the size formula.
    pub max_patches: u32,
}

/// An input size and what the image processor makes of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ImagePlan {
    /// `[width, height]` of the image given.
    pub input: [u32; 2],
    /// `[width, height]` after the aspect-preserving resize (the input when `do_resize` is off).
    pub resized: [u32; 2],
    /// Soft tokens the image gives.
    pub soft_tokens: u64,
}

/// Tensors of the weight files, read and ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TensorCounts {
    /// Vision tensors the encoder read.
    pub read: usize,
    /// Their size as stored (packed for quantized weights).
    pub bytes_read: u64,
    /// Tensors not read, by group.
    pub ignored: IgnoredTensors,
}

/// Tensors not read, by what they belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct IgnoredTensors {
    /// `language_model.*`, `lm_head.*`.
    pub language_model: usize,
    /// `audio_tower.*`, `embed_audio.*`.
    pub audio: usize,
    /// Everything else: rotary tables, clip bounds the config does not use, other towers.
    pub other: usize,
}

impl Inspection {
    /// The facts as pretty-printed JSON (field names as in this type; paths as strings).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The facts of `encoder`, with the soft-token budget `budget` (else the checkpoint's,
    /// else 280) and, when `image_size` (`(width, height)`) is given, what an image of that
    /// size becomes. Runs one encode of the smallest input (one soft token) to report the
    /// features' dtype, and reads the loaded tensors once for the cache identity.
    pub fn of(
        encoder: &VisionEncoder,
        budget: Option<preprocess::SoftTokenBudget>,
        image_size: Option<(u32, u32)>,
    ) -> Result<Inspection> {
        let checkpoint = encoder.checkpoint();
        let config = encoder.config();
        let preprocessor = encoder.preprocessor(budget)?;
        let processor = preprocessor.config();
        let source = processor.budget_source;
        let image = image_size
            .map(|(width, height)| -> Result<ImagePlan> {
                let (h, w) =
                    if processor.do_resize { preprocessor.target_size(height, width)? } else { (height, width) };
                let soft_tokens = encoder.family().soft_tokens(h, w, &preprocessor);
                Ok(ImagePlan { input: [width, height], resized: [w, h], soft_tokens })
            })
            .transpose()?;
        let store = checkpoint.store();
        let mut bytes_read = 0u64;
        let mut read = BTreeSet::new();
        for key in encoder.used_keys() {
            let info = store.info(key)?;
            let dtype = info.dtype.map_err(|found| Error::input(format!("`{key}` has dtype {found}")))?;
            let elements: u64 = info.shape.iter().map(|&d| u64::try_from(d).unwrap_or(0)).product();
            bytes_read += elements * dtype.size() as u64;
            if let Some(stored) = store.stored_name(key) {
                read.insert(stored.to_owned());
            }
        }
        let mut ignored = IgnoredTensors::default();
        for name in store.files().names().filter(|n| !read.contains(*n)) {
            let name = name.strip_prefix("model.").unwrap_or(name);
            if name.starts_with("language_model.") || name.starts_with("lm_head") {
                ignored.language_model += 1;
            } else if name.starts_with("audio_tower.") || name.starts_with("embed_audio.") {
                ignored.audio += 1;
            } else {
                ignored.other += 1;
            }
        }
        let quantized_modules = checkpoint
            .quantization()
            .modules()
            .iter()
            .map(|(module, q)| QuantizedModule {
                module: module.clone(),
                mode: q.mode().as_str().to_owned(),
                bits: q.bits(),
                group_size: q.group_size(),
            })
            .collect();
        Ok(Inspection {
            model_dir: checkpoint.dir().to_path_buf(),
            origin: ModelOrigin::from(checkpoint.origin()),
            model_type: config.model_type,
            vision: config.vision.clone(),
            feature_width: config.text_hidden_size,
            feature_dtype: feature_dtype(encoder)?,
            compute_dtype: encoder.options().compute_dtype,
            index_file: checkpoint.index_file().map(Path::to_path_buf),
            weight_files: checkpoint.weight_files().to_vec(),
            quantized_modules,
            budget: Budget {
                max_soft_tokens: processor.max_soft_tokens.get(),
                source,
                max_patches: preprocessor.max_patches(),
            },
            image,
            tensors: TensorCounts { read: encoder.used_keys().len(), bytes_read, ignored },
            cache_identity: encoder.cache_identity()?,
            mlx: MlxLibrary::current()?,
            kernels: crate::kernels::execution(encoder.options().kernels)?.1,
        })
    }
}

/// The features' dtype: one encode of the smallest input, one soft token of zeros shaped by the
/// model's own configuration (not the processor's, which may not fit it).
fn feature_dtype(encoder: &VisionEncoder) -> Result<String> {
    let input = encoder.model().smallest_input()?;
    Ok(encoder.encode(&[input])?.features.dtype().to_string())
}
