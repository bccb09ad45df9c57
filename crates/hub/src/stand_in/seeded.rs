//! [`SeededCheckpoint`]: a published-looking sharded checkpoint made from a small model
//! directory: its tensors spread over shards beside seeded language-model tensors that outweigh
//! them, an index, and the files a Hub repository holds besides.

use super::HostedFile;
use std::collections::BTreeMap;
use std::path::Path;

/// A tensor: name, dtype, shape, bytes.
type Tensor = (String, safetensors::Dtype, Vec<usize>, Vec<u8>);

/// A checkpoint's files by path.
#[derive(Debug, Clone)]
pub struct SeededCheckpoint {
    pub files: BTreeMap<String, Vec<u8>>,
}

impl SeededCheckpoint {
    /// From a model directory (`config.json`, other JSON files, `*.safetensors`): every tensor
    /// of its weight files, renamed to the raw Hugging Face form (`model.` prefixed), spread
    /// round-robin over `shards` shards, each shard also holding `language_model_bytes` of
    /// seeded `model.language_model.*` tensors; `model.safetensors.index.json` naming them all;
    /// the directory's other files as they are, and a seeded `tokenizer.json`.
    pub fn from_model_dir(dir: &Path, shards: usize, language_model_bytes: usize, seed: u64) -> std::io::Result<Self> {
        let shards = shards.max(1);
        let mut files = BTreeMap::new();
        let mut tensors: Vec<Tensor> = Vec::new();
        let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(entry.path())?;
            if name.ends_with(".safetensors") {
                let file = safetensors::SafeTensors::deserialize(&bytes).map_err(invalid)?;
                for (tensor, view) in file.tensors() {
                    let raw = if tensor.starts_with("model.") { tensor } else { format!("model.{tensor}") };
                    tensors.push((raw, view.dtype(), view.shape().to_vec(), view.data().to_vec()));
                }
            } else if entry.path().is_file() {
                files.insert(name, bytes);
            }
        }
        let mut random = Lcg(seed);
        let per_tensor = 64usize << 10;
        let mut weight_map = BTreeMap::new();
        let mut shard_tensors: Vec<Vec<Tensor>> = vec![Vec::new(); shards];
        for (i, tensor) in tensors.into_iter().enumerate() {
            shard_tensors[i % shards].push(tensor);
        }
        for (s, shard) in shard_tensors.iter_mut().enumerate() {
            let mut left = language_model_bytes;
            let mut layer = 0;
            while left > 0 {
                let len = left.min(per_tensor) / 2 * 2;
                if len == 0 {
                    break;
                }
                let name = format!("model.language_model.layers.{}.mlp.weight", s * 100_000 + layer);
                shard.push((name, safetensors::Dtype::BF16, vec![len / 2], random.bytes(len)));
                left -= len;
                layer += 1;
            }
        }
        let mut total_size = 0usize;
        for (s, shard) in shard_tensors.iter().enumerate() {
            let file_name = format!("model-{:05}-of-{:05}.safetensors", s + 1, shards);
            let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = shard
                .iter()
                .map(|(name, dtype, shape, data)| {
                    safetensors::tensor::TensorView::new(*dtype, shape.clone(), data).map(|v| (name.clone(), v))
                })
                .collect::<Result<_, _>>()
                .map_err(invalid)?;
            for (name, _, _, data) in shard {
                weight_map.insert(name.clone(), file_name.clone());
                total_size += data.len();
            }
            let metadata = Some([("format".to_owned(), "pt".to_owned())].into());
            files.insert(file_name, safetensors::serialize(views, metadata).map_err(invalid)?);
        }
        let index = serde_json::json!({"metadata": {"total_size": total_size}, "weight_map": weight_map});
        files.insert(crate::INDEX_FILE.to_owned(), serde_json::to_vec_pretty(&index).map_err(invalid)?);
        files.insert("tokenizer.json".to_owned(), random.bytes(8192));
        Ok(SeededCheckpoint { files })
    }

    /// The files as the stand-in hosts them.
    pub fn hosted(&self) -> BTreeMap<String, HostedFile> {
        self.files.iter().map(|(p, b)| (p.clone(), HostedFile::new(p, b.clone()))).collect()
    }

    /// Writes the files into `dir` (a directory load of the same checkpoint).
    pub fn write_to(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        for (path, bytes) in &self.files {
            std::fs::write(dir.join(path), bytes)?;
        }
        Ok(())
    }

    /// The bytes of every file.
    pub fn total_bytes(&self) -> u64 {
        self.files.values().map(|b| b.len() as u64).sum()
    }
}

fn invalid(error: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, error.to_string())
}

/// A small seeded generator (the tensors' values only need to be fixed and non-trivial).
struct Lcg(u64);

impl Lcg {
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| {
                self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (self.0 >> 56) as u8
            })
            .collect()
    }
}
