//! [`ModelType`]: a checkpoint's `model_type`, and its one table of names.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which Gemma 4 model a checkpoint is (its `config.json`'s `model_type`): it names the
/// [`Family`](super::Family) whose rules load, prepare and encode it ([`ModelType::family`]).
///
/// Spelled `gemma4` and `gemma4_unified` wherever it is written (config files, `inspect`, the
/// Python package's `model_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum ModelType {
    /// `gemma4` (e2b, e4b, 26B-A4B, 31B): a SigLIP-style vision tower;
    /// `Gemma4Processor.from_pretrained`, `processing_gemma4.py`.
    Gemma4,
    /// `gemma4_unified` (the 12B encoder-free model): a patch embedder without a transformer;
    /// `processing_gemma4_unified.py`.
    Gemma4Unified,
}

impl ModelType {
    /// Every model type.
    pub const ALL: [ModelType; 2] = [ModelType::Gemma4, ModelType::Gemma4Unified];

    /// The name: `gemma4` or `gemma4_unified`.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelType::Gemma4 => "gemma4",
            ModelType::Gemma4Unified => "gemma4_unified",
        }
    }
}

impl fmt::Display for ModelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a model type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not gemma4 or gemma4_unified")]
pub struct UnknownModelType(pub String);

impl FromStr for ModelType {
    type Err = UnknownModelType;

    fn from_str(name: &str) -> Result<ModelType, UnknownModelType> {
        ModelType::ALL.into_iter().find(|t| t.as_str() == name).ok_or_else(|| UnknownModelType(name.to_owned()))
    }
}

impl From<ModelType> for &'static str {
    fn from(model_type: ModelType) -> &'static str {
        model_type.as_str()
    }
}

impl TryFrom<String> for ModelType {
    type Error = UnknownModelType;
    fn try_from(name: String) -> Result<ModelType, UnknownModelType> {
        name.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_and_serialises_as_itself() {
        for model_type in ModelType::ALL {
            assert_eq!(model_type.as_str().parse::<ModelType>(), Ok(model_type));
            assert_eq!(serde_json::to_string(&model_type).unwrap(), format!("\"{model_type}\""));
            assert_eq!(serde_json::from_str::<ModelType>(&format!("\"{model_type}\"")).unwrap(), model_type);
        }
        assert_eq!("gemma3".parse::<ModelType>(), Err(UnknownModelType("gemma3".to_owned())));
        assert_eq!("gemma3".parse::<ModelType>().unwrap_err().to_string(), "`gemma3` is not gemma4 or gemma4_unified");
        assert!(serde_json::from_str::<ModelType>("\"Gemma4\"").is_err());
    }
}
