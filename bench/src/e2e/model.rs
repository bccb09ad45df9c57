//! The seeded checkpoints `bench_e2e.py make` writes, with their dimensions.

use project::Result;
use serde::Deserialize;
use std::path::PathBuf;

/// A checkpoint written by `bench_e2e.py make`, with its dimensions (what FLOP counting needs).
#[derive(Debug, Clone, Deserialize)]
pub struct Model {
    #[serde(rename = "model")]
    pub name: String,
    pub dir: PathBuf,
    #[serde(rename = "model_type", deserialize_with = "is_unified")]
    pub unified: bool,
    /// For a quantized checkpoint, which modules are quantized how (`bench_e2e.py`'s
    /// `describe_quant`), and the bf16 model it quantizes.
    #[serde(default)]
    pub quantization: Option<String>,
    #[serde(default)]
    pub base: Option<String>,
    /// Every numeric field of the line (hidden, layers, heads, …).
    #[serde(flatten)]
    pub dims: std::collections::BTreeMap<String, serde_json::Value>,
}

fn is_unified<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<bool, D::Error> {
    Ok(String::deserialize(d)? == "gemma4_unified")
}

impl Model {
    pub fn dim(&self, key: &str) -> Option<f64> {
        self.dims.get(key).and_then(serde_json::Value::as_f64)
    }
}

/// The model lines of `bench_e2e.py make`, with their directories made absolute.
pub fn parse_models(text: &str) -> Result<Vec<Model>> {
    let models: Vec<Model> = text
        .lines()
        .filter(|l| l.starts_with('{') && l.contains("\"model\""))
        .map(|line| {
            let mut model: Model =
                serde_json::from_str(line).map_err(|e| format!("bench_e2e.py make printed `{line}`: {e}"))?;
            model.dir = project::root().join(&model.dir);
            Ok(model)
        })
        .collect::<Result<_>>()?;
    if models.is_empty() {
        return Err(format!("bench_e2e.py make listed no models: {text}"));
    }
    Ok(models)
}
