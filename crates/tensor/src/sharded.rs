//! A checkpoint stored as one safetensors file, as shards listed by an index, or as several
//! files read together.

use crate::{Array, Error, Result, SafetensorsFile, TensorInfo};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The tensors of a checkpoint: a single `*.safetensors` file, the shards named by a
/// Hugging Face index (`model.safetensors.index.json`, whose `weight_map` maps each tensor
/// name to a shard file in the same directory), or a list of files read together ([`from_files`](ShardedSafetensors::from_files)).
///
/// Opened from an index, shards are opened on first use, so reading a few tensors of a large
/// checkpoint touches only the shards (and pages) that hold them; a shard that is missing or
/// malformed is an error when one of its tensors is requested, naming the shard. Opened from a
/// list of files, every header is read at once (the data stays mapped, not read).
#[derive(Debug)]
pub struct ShardedSafetensors {
    source: PathBuf,
    /// Tensor name → shard file.
    weight_map: BTreeMap<String, PathBuf>,
    /// For a single file: its header, read at open.
    single: Option<Arc<SafetensorsFile>>,
    opened: Mutex<BTreeMap<PathBuf, Arc<SafetensorsFile>>>,
    /// Names found in more than one file of [`from_files`](ShardedSafetensors::from_files):
    /// (name, the file whose tensor is hidden, the file whose tensor is read).
    shadowed: Vec<(String, PathBuf, PathBuf)>,
}

impl ShardedSafetensors {
    /// Opens a `.safetensors` file or a `*.index.json` index.
    pub fn open(path: impl AsRef<Path>) -> Result<ShardedSafetensors> {
        let path = path.as_ref();
        if path.extension().is_some_and(|e| e == "json") {
            Self::open_index(path)
        } else {
            let file = Arc::new(SafetensorsFile::open(path)?);
            let weight_map = file.names().map(|n| (n.to_owned(), path.to_path_buf())).collect();
            Ok(ShardedSafetensors {
                source: path.to_path_buf(),
                weight_map,
                single: Some(file),
                opened: Mutex::new(BTreeMap::new()),
                shadowed: Vec::new(),
            })
        }
    }

    fn open_index(path: &Path) -> Result<ShardedSafetensors> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| Error::format(path, format!("invalid JSON: {e}")))?;
        let map = json
            .get("weight_map")
            .and_then(|m| m.as_object())
            .ok_or_else(|| Error::format(path, "no `weight_map` object"))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let weight_map = map
            .iter()
            .map(|(name, shard)| {
                let shard = shard
                    .as_str()
                    .filter(|s| !s.is_empty() && !s.contains('/') && !s.contains('\\') && *s != "..")
                    .ok_or_else(|| Error::format(path, format!("`weight_map.{name}` is not a shard file name")))?;
                Ok((name.clone(), dir.join(shard)))
            })
            .collect::<Result<_>>()?;
        Ok(ShardedSafetensors {
            source: path.to_path_buf(),
            weight_map,
            single: None,
            opened: Mutex::new(BTreeMap::new()),
            shadowed: Vec::new(),
        })
    }

    /// The tensors of `files` read together, in order, as a Python dict is updated file by file
    /// (`weights.update(mx.load(f))`): a name held by several files resolves to the last of
    /// them, and each such clash is listed by [`shadowed`](ShardedSafetensors::shadowed).
    /// Every header is read and validated now. `source` names the whole (a directory or an
    /// index) in errors about names no file holds.
    pub fn from_files(source: impl AsRef<Path>, files: &[PathBuf]) -> Result<ShardedSafetensors> {
        let mut weight_map: BTreeMap<String, PathBuf> = BTreeMap::new();
        let mut opened = BTreeMap::new();
        let mut shadowed = Vec::new();
        for path in files {
            let file = Arc::new(SafetensorsFile::open(path)?);
            for name in file.names() {
                if let Some(hidden) = weight_map.insert(name.to_owned(), path.clone())
                    && hidden != *path
                {
                    shadowed.push((name.to_owned(), hidden, path.clone()));
                }
            }
            opened.insert(path.clone(), file);
        }
        Ok(ShardedSafetensors {
            source: source.as_ref().to_path_buf(),
            weight_map,
            single: None,
            opened: Mutex::new(opened),
            shadowed,
        })
    }

    /// Names held by more than one of the files given to
    /// [`from_files`](ShardedSafetensors::from_files): (name, the file whose tensor is hidden,
    /// the file whose tensor is read), in the order found.
    pub fn shadowed(&self) -> &[(String, PathBuf, PathBuf)] {
        &self.shadowed
    }

    /// The file that holds `name` (for an index: the shard it names), if any.
    pub fn file_of(&self, name: &str) -> Option<&Path> {
        self.weight_map.get(name).map(PathBuf::as_path)
    }

    /// Every file the tensors come from, sorted, each once.
    pub fn files(&self) -> Vec<&Path> {
        let files: std::collections::BTreeSet<&Path> = self.weight_map.values().map(PathBuf::as_path).collect();
        files.into_iter().collect()
    }

    /// The file or index this was opened from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// All tensor names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.weight_map.keys().map(String::as_str)
    }

    /// Whether the checkpoint lists `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.weight_map.contains_key(name)
    }

    /// Dtype and shape of `name` (opens its shard).
    pub fn info(&self, name: &str) -> Result<TensorInfo> {
        let file = self.shard_of(name)?;
        file.info(name)
            .cloned()
            .ok_or_else(|| Error::format(file.path(), format!("the index lists `{name}` here, but the file lacks it")))
    }

    /// Loads `name` (opens its shard).
    pub fn load(&self, name: &str) -> Result<Array> {
        let file = self.shard_of(name)?;
        if file.info(name).is_none() {
            return Err(Error::format(file.path(), format!("the index lists `{name}` here, but the file lacks it")));
        }
        file.load(name)
    }

    fn shard_of(&self, name: &str) -> Result<Arc<SafetensorsFile>> {
        let shard = self
            .weight_map
            .get(name)
            .ok_or_else(|| Error::format(&self.source, format!("no tensor named `{name}`")))?;
        if let Some(single) = &self.single {
            return Ok(Arc::clone(single));
        }
        let mut opened = self.opened.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(file) = opened.get(shard) {
            return Ok(Arc::clone(file));
        }
        let file = Arc::new(SafetensorsFile::open(shard)?);
        opened.insert(shard.clone(), Arc::clone(&file));
        Ok(file)
    }
}
