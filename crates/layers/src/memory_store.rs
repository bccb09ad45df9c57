//! [`MemoryStore`]: named tensors held in memory.

use crate::{Error, Result, WeightStore};
use std::collections::BTreeMap;
use tensor::{Array, SharedArray, TensorInfo};

/// A [`WeightStore`] over arrays held in memory, evaluated and settled ([`SharedArray`], so
/// the store may be shared between threads): tests, benches, weights made or converted at run
/// time.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    tensors: BTreeMap<String, SharedArray>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// A store holding `tensors`, each evaluated now.
    pub fn from_arrays<K: Into<String>>(tensors: impl IntoIterator<Item = (K, Array)>) -> Result<MemoryStore> {
        let mut store = MemoryStore::new();
        for (name, array) in tensors {
            store.insert(name, array)?;
        }
        Ok(store)
    }

    /// Adds (or replaces) `name`, evaluating `array`.
    pub fn insert(&mut self, name: impl Into<String>, array: Array) -> Result<()> {
        self.tensors.insert(name.into(), SharedArray::new(array)?);
        Ok(())
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether the store holds no tensor.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    fn get(&self, name: &str) -> Result<&SharedArray> {
        self.tensors.get(name).ok_or_else(|| Error::Missing { name: name.to_owned() })
    }
}

impl WeightStore for MemoryStore {
    fn names(&self) -> Vec<String> {
        self.tensors.keys().cloned().collect()
    }

    fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    fn info(&self, name: &str) -> Result<TensorInfo> {
        let array = self.get(name)?;
        Ok(TensorInfo { dtype: Ok(array.dtype()), shape: array.shape() })
    }

    fn load(&self, name: &str) -> Result<Array> {
        Ok((**self.get(name)?).clone())
    }
}
