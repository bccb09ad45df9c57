//! [`ComputeDtype`]: the dtype an encoder computes in, and its one table of names.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The dtype the encoder computes in.
///
/// Spelled `native` and `f32` wherever a user writes it (the command's `--dtype`, the Python
/// package's `dtype=`, `Inspection`, cache identities); `float32` is accepted for `f32`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum ComputeDtype {
    /// The checkpoint's own dtype (bf16 for published checkpoints): what mlx-vlm computes on
    /// the checkpoint as published.
    #[default]
    Native,
    /// Weights converted to float32 once at load, activations float32: what mlx-vlm computes
    /// on the model cast to float32.
    F32,
}

impl ComputeDtype {
    /// Every compute dtype, in the order help texts list them.
    pub const ALL: [ComputeDtype; 2] = [ComputeDtype::Native, ComputeDtype::F32];

    /// The name: `native` or `f32`.
    pub fn as_str(self) -> &'static str {
        match self {
            ComputeDtype::Native => "native",
            ComputeDtype::F32 => "f32",
        }
    }

    /// The dtype weights are converted to at load (`None`: as stored).
    pub fn weight_dtype(self) -> Option<tensor::Dtype> {
        match self {
            ComputeDtype::Native => None,
            ComputeDtype::F32 => Some(tensor::Dtype::F32),
        }
    }
}

impl fmt::Display for ComputeDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a compute dtype.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dtype must be \"native\" or \"f32\", got {0:?}")]
pub struct UnknownComputeDtype(pub String);

impl FromStr for ComputeDtype {
    type Err = UnknownComputeDtype;

    fn from_str(name: &str) -> Result<ComputeDtype, UnknownComputeDtype> {
        match name {
            "float32" => Ok(ComputeDtype::F32),
            _ => ComputeDtype::ALL
                .into_iter()
                .find(|d| d.as_str() == name)
                .ok_or_else(|| UnknownComputeDtype(name.to_owned())),
        }
    }
}

impl From<ComputeDtype> for &'static str {
    fn from(dtype: ComputeDtype) -> &'static str {
        dtype.as_str()
    }
}

impl TryFrom<String> for ComputeDtype {
    type Error = UnknownComputeDtype;
    fn try_from(name: String) -> Result<ComputeDtype, UnknownComputeDtype> {
        name.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_serialises_as_itself() {
        for dtype in ComputeDtype::ALL {
            assert_eq!(dtype.as_str().parse::<ComputeDtype>(), Ok(dtype));
            assert_eq!(serde_json::to_string(&dtype).unwrap(), format!("\"{dtype}\""));
            assert_eq!(serde_json::from_str::<ComputeDtype>(&format!("\"{dtype}\"")).unwrap(), dtype);
        }
        assert_eq!("float32".parse::<ComputeDtype>(), Ok(ComputeDtype::F32));
        assert_eq!(
            "f16".parse::<ComputeDtype>().unwrap_err().to_string(),
            "dtype must be \"native\" or \"f32\", got \"f16\""
        );
    }
}
