//! [`WeightStore`]: where a model's named tensors come from.

use crate::{Error, Result};
use tensor::{Array, ShardedSafetensors, TensorInfo};

/// A source of named tensors: a checkpoint on disk, an in-memory map, or a renaming view over
/// either. Blocks never talk to a store directly; they read it through [`Weights`](crate::Weights),
/// which checks shapes and dtypes and records what was used.
///
/// Implementations must be shareable between threads (one store backs a whole model).
pub trait WeightStore: Send + Sync {
    /// Every tensor name, sorted.
    fn names(&self) -> Vec<String>;

    /// Whether the store holds `name` (cheap: no tensor data is read).
    fn contains(&self, name: &str) -> bool;

    /// Dtype and shape of `name`; [`Error::Missing`] when absent.
    fn info(&self, name: &str) -> Result<TensorInfo>;

    /// The tensor `name`, in its stored dtype; [`Error::Missing`] when absent.
    fn load(&self, name: &str) -> Result<Array>;
}

impl WeightStore for ShardedSafetensors {
    fn names(&self) -> Vec<String> {
        ShardedSafetensors::names(self).map(str::to_owned).collect()
    }

    fn contains(&self, name: &str) -> bool {
        ShardedSafetensors::contains(self, name)
    }

    fn info(&self, name: &str) -> Result<TensorInfo> {
        if !ShardedSafetensors::contains(self, name) {
            return Err(Error::Missing { name: name.to_owned() });
        }
        Ok(ShardedSafetensors::info(self, name)?)
    }

    fn load(&self, name: &str) -> Result<Array> {
        if !ShardedSafetensors::contains(self, name) {
            return Err(Error::Missing { name: name.to_owned() });
        }
        Ok(ShardedSafetensors::load(self, name)?)
    }
}
