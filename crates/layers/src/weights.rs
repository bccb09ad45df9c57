//! [`Weights`]: a prefix-scoped, checked view of a [`WeightStore`].

use crate::{Error, Execution, Quantization, QuantizationPlan, Result, WeightStore};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use tensor::{Dtype, SharedArray, TensorInfo};

/// A view of a [`WeightStore`] below a key prefix, as blocks read their weights.
///
/// Cloning and narrowing ([`pp`](Weights::pp)) are cheap and share one record of the keys
/// handed out, so after a model is loaded the caller can list what the checkpoint holds that
/// no block asked for ([`unused_keys`](Weights::unused_keys)) and refuse to run half-loaded.
///
/// [`get`](Weights::get) checks that the tensor exists, has the expected shape and a float
/// dtype, and returns it evaluated. Tensors keep their stored dtype (mlx-vlm loads without a
/// cast) unless a compute dtype is set with [`with_compute_dtype`](Weights::with_compute_dtype),
/// in which case each float tensor is converted once, here. Packed quantized tensors are
/// read with [`get_packed`](Weights::get_packed), which checks an exact dtype and never
/// converts; which modules are quantized comes from the view's [`QuantizationPlan`].
///
/// The view also carries who computes the blocks loaded from it ([`Execution`], set with
/// [`with_execution`](Weights::with_execution); MLX's ops by default): every block keeps the
/// execution of the view it was loaded from, so it is chosen once, for a whole model, at load.
#[derive(Clone)]
pub struct Weights {
    store: Arc<dyn WeightStore>,
    prefix: String,
    compute_dtype: Option<Dtype>,
    execution: Execution,
    quantization: Arc<QuantizationPlan>,
    used: Arc<Mutex<BTreeSet<String>>>,
}

impl Weights {
    /// A view of the whole store, with an empty record of used keys.
    pub fn new(store: Arc<dyn WeightStore>) -> Weights {
        Weights {
            store,
            prefix: String::new(),
            compute_dtype: None,
            execution: Execution::Mlx,
            quantization: Arc::default(),
            used: Arc::default(),
        }
    }

    /// The same view with the checkpoint's quantized modules (default: none).
    pub fn with_quantization(mut self, plan: Arc<QuantizationPlan>) -> Weights {
        self.quantization = plan;
        self
    }

    /// How the module at this view's prefix is quantized, if the plan lists it.
    pub fn quantization(&self) -> Option<Quantization> {
        self.quantization.get(&self.prefix)
    }

    /// The same view with tensors converted to `dtype` when loaded (`None`: stored dtype).
    pub fn with_compute_dtype(mut self, dtype: Option<Dtype>) -> Weights {
        self.compute_dtype = dtype;
        self
    }

    /// The dtype tensors are converted to when loaded, if any.
    pub fn compute_dtype(&self) -> Option<Dtype> {
        self.compute_dtype
    }

    /// The same view with the blocks loaded from it computed by `execution` (default:
    /// [`Execution::Mlx`]).
    pub fn with_execution(mut self, execution: Execution) -> Weights {
        self.execution = execution;
        self
    }

    /// Who computes the blocks loaded from this view.
    pub fn execution(&self) -> Execution {
        self.execution
    }

    /// The view below `name`: `pp("q_proj")` on prefix `a.b` reads keys `a.b.q_proj.*`.
    pub fn pp(&self, name: impl fmt::Display) -> Weights {
        Weights { prefix: self.key(&name.to_string()), ..self.clone() }
    }

    /// This view's prefix (empty for the whole store).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The full store key of `name` below this view's prefix.
    pub fn key(&self, name: &str) -> String {
        if self.prefix.is_empty() { name.to_owned() } else { format!("{}.{name}", self.prefix) }
    }

    /// Whether the store holds `name` below this prefix.
    pub fn contains(&self, name: &str) -> bool {
        self.store.contains(&self.key(name))
    }

    /// Dtype and shape of `name` below this prefix, without loading it or marking it used.
    pub fn info(&self, name: &str) -> Result<TensorInfo> {
        self.store.info(&self.key(name))
    }

    /// The tensor `name` below this prefix, evaluated, after checking that it exists
    /// ([`Error::Missing`]), has shape `expected_shape` ([`Error::Shape`]; `&[]` for a 0-d
    /// scalar) and a float dtype ([`Error::Dtype`]). Converted to the compute dtype if one is
    /// set. Marks the key used.
    pub fn get(&self, name: &str, expected_shape: &[i32]) -> Result<SharedArray> {
        let (key, stored) = self.read(name, expected_shape, &|d| d.is_float(), "a float type")?;
        let array = match self.compute_dtype {
            Some(dtype) if dtype != stored.dtype() => stored.astype(dtype)?,
            _ => stored,
        };
        self.hand_out(key, array)
    }

    /// The tensor `name` below this prefix in exactly the dtype `dtype` (a packed quantized
    /// weight, uint32; the uint8 scales of the floating-point quantization modes), never
    /// converted to the compute dtype. Checks and records like [`get`](Weights::get).
    pub fn get_packed(&self, name: &str, expected_shape: &[i32], dtype: Dtype) -> Result<SharedArray> {
        let (key, stored) = self.read(name, expected_shape, &|d| d == dtype, &dtype.to_string())?;
        self.hand_out(key, stored)
    }

    /// Reads `name` after checking presence, shape and dtype (`accept`, described as
    /// `expected` in errors), before and after loading.
    fn read(
        &self,
        name: &str,
        expected_shape: &[i32],
        accept: &dyn Fn(Dtype) -> bool,
        expected: &str,
    ) -> Result<(String, tensor::Array)> {
        let key = self.key(name);
        if !self.store.contains(&key) {
            return Err(Error::Missing { name: key });
        }
        let info = self.store.info(&key)?;
        check(&key, expected_shape, &info.shape, &info.dtype, accept, expected)?;
        let stored = self.store.load(&key)?;
        // A store's info and its data must agree; a renaming view could get this wrong.
        check(&key, expected_shape, &stored.shape(), &Ok(stored.dtype()), accept, expected)?;
        Ok((key, stored))
    }

    fn hand_out(&self, key: String, array: tensor::Array) -> Result<SharedArray> {
        let array = SharedArray::new(array)?;
        self.used.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(key);
        Ok(array)
    }

    /// Every key handed out by [`get`](Weights::get) through this view or any view sharing its
    /// record (clones and [`pp`](Weights::pp) narrowings), sorted.
    pub fn used_keys(&self) -> Vec<String> {
        self.used.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).iter().cloned().collect()
    }

    /// Keys of the store below this prefix that were never handed out, sorted.
    pub fn unused_keys(&self) -> Vec<String> {
        let used = self.used.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let below = if self.prefix.is_empty() { String::new() } else { format!("{}.", self.prefix) };
        self.store.names().into_iter().filter(|name| name.starts_with(&below) && !used.contains(name)).collect()
    }

    /// `Ok` when every key below this prefix was used, else [`Error::Unused`] listing the rest.
    pub fn ensure_all_used(&self) -> Result<()> {
        let names = self.unused_keys();
        if names.is_empty() { Ok(()) } else { Err(Error::Unused { names }) }
    }
}

fn check(
    key: &str,
    expected_shape: &[i32],
    shape: &[i32],
    dtype: &std::result::Result<Dtype, String>,
    accept: &dyn Fn(Dtype) -> bool,
    expected: &str,
) -> Result<()> {
    match dtype {
        Ok(dtype) if accept(*dtype) => {}
        Ok(other) => {
            return Err(Error::Dtype { name: key.to_owned(), expected: expected.into(), actual: other.to_string() });
        }
        Err(name) => {
            return Err(Error::Dtype { name: key.to_owned(), expected: expected.into(), actual: name.clone() });
        }
    }
    if shape != expected_shape {
        return Err(Error::Shape { name: key.to_owned(), expected: expected_shape.to_vec(), actual: shape.to_vec() });
    }
    Ok(())
}

impl fmt::Debug for Weights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Weights")
            .field("prefix", &self.prefix)
            .field("compute_dtype", &self.compute_dtype)
            .field("execution", &self.execution)
            .field("quantized_modules", &self.quantization.modules().len())
            .field("used", &self.used_keys().len())
            .finish_non_exhaustive()
    }
}
