//! [`QuantizationPlan`]: which modules of a checkpoint are quantized, and how; each by a
//! [`Quantization`] (`kernels`' own, re-exported: one type for the MLX ops and the host
//! kernels), with the MLX shapes of its packed weight and scales.

pub use kernels::quantized::{Quantization, QuantizationMode};
use std::collections::BTreeMap;
use tensor::Dtype;

/// The shape of the packed uint32 weight of an `[out_dim, in_dim]` map under `quantization`:
/// `[out_dim, in_dim · bits / 32]`; `None` unless `in_dim` is a positive multiple of the group
/// size.
pub(crate) fn packed_shape(quantization: Quantization, in_dim: i32, out_dim: i32) -> Option<[i32; 2]> {
    let (bits, group) = (quantization.bits() as i64, quantization.group_size() as i64);
    (in_dim > 0 && i64::from(in_dim) % group == 0).then(|| [out_dim, (i64::from(in_dim) * bits / 32) as i32])
}

/// The shape of the scales (and biases) of an `[out_dim, in_dim]` map under `quantization`:
/// `[out_dim, in_dim / group_size]`.
pub(crate) fn scales_shape(quantization: Quantization, in_dim: i32, out_dim: i32) -> [i32; 2] {
    [out_dim, (i64::from(in_dim) / quantization.group_size() as i64) as i32]
}

/// The stored dtype of the scales, where the mode fixes it (uint8 for the floating-point
/// modes; `None` for affine, whose scales are any float dtype).
pub(crate) fn scales_dtype(quantization: Quantization) -> Option<Dtype> {
    if quantization.mode().has_biases() { None } else { Some(Dtype::U8) }
}

/// The quantized modules of a checkpoint: full module key (e.g.
/// `embed_vision.embedding_projection`, the prefix of its `weight` / `scales` / `biases`) →
/// its [`Quantization`]. Modules not listed are dense. Deciding which modules are quantized
/// and how is the checkpoint loader's business; blocks only look their prefix up (through
/// [`Weights::quantization`](crate::Weights::quantization)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuantizationPlan {
    modules: BTreeMap<String, Quantization>,
}

impl QuantizationPlan {
    /// A plan quantizing exactly `modules`.
    pub fn new(modules: BTreeMap<String, Quantization>) -> QuantizationPlan {
        QuantizationPlan { modules }
    }

    /// How the module at `key` is quantized, if it is.
    pub fn get(&self, key: &str) -> Option<Quantization> {
        self.modules.get(key).copied()
    }

    /// Every quantized module, sorted by key.
    pub fn modules(&self) -> &BTreeMap<String, Quantization> {
        &self.modules
    }

    /// Whether no module is quantized.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }
}
