//! [`Selection`]: which parts of a checkpoint a loader reads, and which files are its weights.

use std::collections::BTreeSet;

/// The index of a sharded checkpoint.
pub const INDEX_FILE: &str = "model.safetensors.index.json";

/// What a loader reads of a checkpoint: some small files, taken whole when the revision has
/// them, and the tensors whose stored names start with one of `tensor_prefixes`. The weight
/// files are found as mlx-vlm's `load_model` finds them ([`weight_files`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Files at the checkpoint's root, by name (`config.json`, ...). `config.json` must exist.
    pub files: Vec<String>,
    /// Stored tensor-name prefixes (`model.vision_tower.`, ...).
    pub tensor_prefixes: Vec<String>,
}

impl Selection {
    /// Whether the tensor stored as `name` is read.
    pub fn takes_tensor(&self, name: &str) -> bool {
        self.tensor_prefixes.iter().any(|p| name.starts_with(p.as_str()))
    }
}

/// The weight files of a checkpoint whose root holds `files`, as mlx-vlm 0.7.10's `load_model`
/// finds them: the shards the index names (`indexed`: its `weight_map`'s values, when the index
/// exists and parses) that exist; when there is no index or it names none that exists, every
/// `*.safetensors` file (hidden ones excepted, as `glob` skips them) but those ending in
/// `consolidated.safetensors`. Sorted.
pub fn weight_files<'a>(indexed: Option<&BTreeSet<String>>, files: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let files: BTreeSet<&str> = files.into_iter().collect();
    if let Some(indexed) = indexed {
        let existing: Vec<String> = indexed.iter().filter(|s| files.contains(s.as_str())).cloned().collect();
        if !existing.is_empty() {
            return existing;
        }
    }
    files
        .into_iter()
        .filter(|name| {
            !name.contains('/')
                && name.ends_with(".safetensors")
                && !name.starts_with('.')
                && !name.ends_with("consolidated.safetensors")
        })
        .map(str::to_owned)
        .collect()
}

/// The shard names an index's `weight_map` gives, deduplicated; `None` when the text is not
/// JSON; `Err` when a shard is not a plain file name.
pub fn indexed_shards(index: &[u8]) -> Result<Option<BTreeSet<String>>, String> {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(index) else { return Ok(None) };
    let map = match json.get("weight_map") {
        None | Some(serde_json::Value::Null) => return Ok(Some(BTreeSet::new())),
        Some(serde_json::Value::Object(map)) => map,
        Some(_) => return Err("`weight_map` is not an object".into()),
    };
    let mut shards = BTreeSet::new();
    for (name, shard) in map {
        let shard = shard
            .as_str()
            .filter(|s| !s.is_empty() && !s.contains('/') && !s.contains('\\') && *s != ".." && *s != ".")
            .ok_or_else(|| format!("`weight_map.{name}` is not a shard file name"))?;
        shards.insert(shard.to_owned());
    }
    Ok(Some(shards))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_files_follow_load_model() {
        let files =
            ["a.safetensors", "b.safetensors", ".hidden.safetensors", "consolidated.safetensors", "x/c.safetensors"];
        assert_eq!(weight_files(None, files), ["a.safetensors", "b.safetensors"]);
        let indexed: BTreeSet<String> = ["b.safetensors".to_owned(), "z.safetensors".to_owned()].into();
        assert_eq!(weight_files(Some(&indexed), files), ["b.safetensors"]);
        let none: BTreeSet<String> = ["z.safetensors".to_owned()].into();
        assert_eq!(weight_files(Some(&none), files), ["a.safetensors", "b.safetensors"]);
    }

    #[test]
    fn index_shards_parse() {
        let shards =
            indexed_shards(br#"{"weight_map":{"a":"m1.safetensors","b":"m1.safetensors","c":"m2.safetensors"}}"#);
        assert_eq!(shards.unwrap().unwrap().len(), 2);
        assert_eq!(indexed_shards(b"not json").unwrap(), None);
        assert!(indexed_shards(br#"{"weight_map":{"a":"../m.safetensors"}}"#).is_err());
        assert!(indexed_shards(br#"{"weight_map":[1]}"#).is_err());
    }
}
