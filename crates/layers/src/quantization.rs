//! [`Quantization`]: how one linear map's weight is packed; [`QuantizationPlan`]: which
//! modules of a checkpoint are quantized, and how.

use crate::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use tensor::Dtype;

/// MLX's quantization schemes (`mode` of `mx.quantize` / `mx.quantized_matmul`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuantizationMode {
    /// `w ≈ scale · q + bias` per group of `group_size` values, `q` of `bits` bits; scales and
    /// biases in a float dtype.
    Affine,
    /// OCP microscaling FP4 (E2M1 values, an E8M0 uint8 scale per 32 values).
    Mxfp4,
    /// NVIDIA FP4 (E2M1 values, an E4M3 uint8 scale per 16 values).
    Nvfp4,
    /// OCP microscaling FP8 (E4M3 values, an E8M0 uint8 scale per 32 values).
    Mxfp8,
}

impl QuantizationMode {
    /// MLX's name of the mode (`"affine"`, `"mxfp4"`, `"nvfp4"`, `"mxfp8"`).
    pub fn as_str(self) -> &'static str {
        match self {
            QuantizationMode::Affine => "affine",
            QuantizationMode::Mxfp4 => "mxfp4",
            QuantizationMode::Nvfp4 => "nvfp4",
            QuantizationMode::Mxfp8 => "mxfp8",
        }
    }

    /// `(group_size, bits)` MLX uses when they are not given (`_defaults_for_mode`).
    pub fn defaults(self) -> (i32, i32) {
        match self {
            QuantizationMode::Affine => (64, 4),
            QuantizationMode::Mxfp4 => (32, 4),
            QuantizationMode::Nvfp4 => (16, 4),
            QuantizationMode::Mxfp8 => (32, 8),
        }
    }

    /// Whether the mode stores per-group biases beside the scales.
    pub fn has_biases(self) -> bool {
        self == QuantizationMode::Affine
    }
}

impl fmt::Display for QuantizationMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for QuantizationMode {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<QuantizationMode, String> {
        Ok(match text {
            "affine" => QuantizationMode::Affine,
            "mxfp4" => QuantizationMode::Mxfp4,
            "nvfp4" => QuantizationMode::Nvfp4,
            "mxfp8" => QuantizationMode::Mxfp8,
            other => return Err(format!("`{other}` is not a quantization mode (affine, mxfp4, nvfp4, mxfp8)")),
        })
    }
}

/// How a linear map's weight is quantized: a mode with its group size and bits, checked
/// against what MLX 0.32.4's `quantize` accepts (affine: groups of 32, 64 or 128, bits 1, 2, 3,
/// 4, 5, 6 or 8; mxfp4: 32 × 4 bits; nvfp4: 16 × 4 bits; mxfp8: 32 × 8 bits). mlx-vlm runs 1-bit
/// affine linears as its own `OneBitLinear` ([`OneBitLinear`](crate::OneBitLinear)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Quantization {
    mode: QuantizationMode,
    group_size: i32,
    bits: i32,
}

impl Quantization {
    /// `mode` with `group_size` and `bits`, each defaulting to MLX's default for the mode
    /// ([`QuantizationMode::defaults`]). [`Error::Config`] for a combination MLX refuses.
    pub fn new(mode: QuantizationMode, group_size: Option<i32>, bits: Option<i32>) -> Result<Quantization> {
        let (default_group, default_bits) = mode.defaults();
        let (group_size, bits) = (group_size.unwrap_or(default_group), bits.unwrap_or(default_bits));
        let valid = match mode {
            QuantizationMode::Affine => matches!(group_size, 32 | 64 | 128) && matches!(bits, 1..=6 | 8),
            other => (group_size, bits) == other.defaults(),
        };
        if !valid {
            let allowed = match mode {
                QuantizationMode::Affine => "group size 32, 64 or 128 and bits 1, 2, 3, 4, 5, 6 or 8".to_owned(),
                other => format!("group size {} and {} bits", other.defaults().0, other.defaults().1),
            };
            return Err(Error::Config {
                block: "quantization",
                what: format!("{mode} with group size {group_size} and {bits} bits: MLX supports {allowed}"),
            });
        }
        Ok(Quantization { mode, group_size, bits })
    }

    pub fn mode(&self) -> QuantizationMode {
        self.mode
    }

    pub fn group_size(&self) -> i32 {
        self.group_size
    }

    pub fn bits(&self) -> i32 {
        self.bits
    }

    /// The shape of the packed uint32 weight of an `[out_dim, in_dim]` map: `[out_dim,
    /// in_dim · bits / 32]`; `None` unless `in_dim` is a multiple of the group size.
    pub fn packed_shape(&self, in_dim: i32, out_dim: i32) -> Option<[i32; 2]> {
        (in_dim > 0 && in_dim % self.group_size == 0)
            .then(|| [out_dim, (i64::from(in_dim) * i64::from(self.bits) / 32) as i32])
    }

    /// The shape of the scales (and biases): `[out_dim, in_dim / group_size]`.
    pub fn scales_shape(&self, in_dim: i32, out_dim: i32) -> [i32; 2] {
        [out_dim, in_dim / self.group_size]
    }

    /// The stored dtype of the scales, when the mode fixes it (uint8 for the floating-point
    /// modes; `None` for affine, whose scales are any float dtype).
    pub fn scales_dtype(&self) -> Option<Dtype> {
        if self.mode.has_biases() { None } else { Some(Dtype::U8) }
    }
}

impl fmt::Display for Quantization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} bits, group {}", self.mode, self.bits, self.group_size)
    }
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
