//! What the hub tests share: a small model directory, the stand-in hosting it as a sharded
//! checkpoint, and an environment of their own (caches in a temporary directory).
#![allow(dead_code, reason = "each test file uses a subset")]

use gemma_vision_hub::stand_in::{SeededCheckpoint, StandIn};
use gemma_vision_hub::{HubEnvironment, HubModel, Selection};
use std::path::{Path, PathBuf};

/// A temporary directory removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("hub-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A model directory: configs and one weight file of vision tensors (MLX names, as converted
/// checkpoints store them), 16 KiB each.
pub fn model_dir(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("config.json"), br#"{"model_type": "gemma4"}"#).unwrap();
    std::fs::write(dir.join("processor_config.json"), br#"{"image_processor": {}}"#).unwrap();
    let data: Vec<Vec<u8>> =
        (0..6u8).map(|i| (0..16384u32).map(|j| (j as u8).wrapping_mul(i + 3) ^ (j >> 8) as u8).collect()).collect();
    let names = [
        "vision_tower.patch_embedder.input_proj.weight",
        "vision_tower.encoder.layers.0.mlp.up_proj.weight",
        "vision_tower.encoder.layers.0.mlp.down_proj.weight",
        "vision_tower.encoder.layers.1.mlp.up_proj.weight",
        "embed_vision.embedding_projection.weight",
        "embed_vision.other.weight",
    ];
    let views: Vec<_> = names
        .iter()
        .zip(&data)
        .map(|(n, d)| {
            (n.to_string(), safetensors::tensor::TensorView::new(safetensors::Dtype::BF16, vec![8192], d).unwrap())
        })
        .collect();
    std::fs::write(dir.join("model.safetensors"), safetensors::serialize(views, None).unwrap()).unwrap();
}

/// The vision selection (what the encoder reads).
pub fn selection() -> Selection {
    let prefixes = ["vision_tower.", "embed_vision.", "vision_embedder."];
    Selection {
        files: vec!["config.json".into(), "processor_config.json".into(), "preprocessor_config.json".into()],
        tensor_prefixes: prefixes.iter().flat_map(|p| [p.to_string(), format!("model.{p}")]).collect(),
    }
}

/// A seeded checkpoint: the model directory's tensors over 2 shards, 1 MiB of language model
/// in each.
pub fn checkpoint(scratch: &Path) -> SeededCheckpoint {
    let source = scratch.join("source");
    model_dir(&source);
    SeededCheckpoint::from_model_dir(&source, 2, 1 << 20, 7).unwrap()
}

/// An environment with its caches under `root`, against `stand_in`.
pub fn environment(root: &Path, stand_in: &StandIn) -> HubEnvironment {
    HubEnvironment {
        endpoint: stand_in.endpoint().to_owned(),
        hf_cache: root.join("hf/hub"),
        store: root.join("store"),
        token: None,
        offline: false,
        progress: false,
    }
}

/// One test's world: a scratch directory, a seeded checkpoint ([`checkpoint`]), the stand-in
/// hosting it as `org/model` on `main`, that commit, and an environment with its caches under
/// the scratch directory.
pub struct World {
    pub scratch: TempDir,
    pub checkpoint: SeededCheckpoint,
    pub stand_in: StandIn,
    pub commit: String,
    pub environment: HubEnvironment,
}

impl World {
    pub fn new(name: &str) -> World {
        World::edited(name, |_| {})
    }

    /// With the checkpoint edited before it is hosted.
    pub fn edited(name: &str, edit: impl FnOnce(&mut SeededCheckpoint)) -> World {
        let scratch = TempDir::new(name);
        let mut checkpoint = checkpoint(&scratch);
        edit(&mut checkpoint);
        let (stand_in, commit) = hosting(&checkpoint);
        let environment = environment(&scratch, &stand_in);
        World { scratch, checkpoint, stand_in, commit, environment }
    }
}

/// A stand-in hosting `checkpoint` as `org/model` on `main`; the commit.
pub fn hosting(checkpoint: &SeededCheckpoint) -> (StandIn, String) {
    let stand_in = StandIn::start().unwrap();
    let commit = stand_in.host("org/model", "main", checkpoint.hosted());
    (stand_in, commit)
}

pub fn model(text: &str) -> HubModel {
    text.parse().unwrap()
}

/// The tensors of the safetensors files in `dir` (name → dtype, shape, bytes).
pub fn tensors_in(dir: &Path) -> std::collections::BTreeMap<String, (String, Vec<usize>, Vec<u8>)> {
    let mut out = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "safetensors") {
            let bytes = std::fs::read(&path).unwrap();
            let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
            for (name, view) in file.tensors() {
                out.insert(name, (format!("{:?}", view.dtype()), view.shape().to_vec(), view.data().to_vec()));
            }
        }
    }
    out
}

/// The bytes a vision-only fetch needs: the small files it takes, each shard's header, and its
/// vision tensors' data.
pub fn needed_bytes(checkpoint: &SeededCheckpoint, selection: &Selection) -> u64 {
    let mut total = 0;
    for (path, bytes) in &checkpoint.files {
        if selection.files.contains(path) || path == gemma_vision_hub::INDEX_FILE {
            total += bytes.len() as u64;
        } else if path.ends_with(".safetensors") {
            let n = u64::from_le_bytes(bytes[..8].try_into().unwrap());
            total += 8 + n;
            let file = safetensors::SafeTensors::deserialize(bytes).unwrap();
            total += file
                .tensors()
                .iter()
                .filter(|(name, _)| selection.takes_tensor(name))
                .map(|(_, v)| v.data().len() as u64)
                .sum::<u64>();
        }
    }
    total
}
