//! Arguments shared by several subcommands.

use clap::Args;
use std::path::PathBuf;
use vision::{ComputeDtype, SoftTokenBudget};

/// The checkpoint and the soft-token budget.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// The model directory: config.json, model.safetensors (or shards with an index),
    /// optionally processor_config.json.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// The soft-token budget per image [default: processor_config.json's, else 280].
    #[arg(long, value_name = "N", value_parser = budget, allow_negative_numbers = true)]
    pub max_soft_tokens: Option<SoftTokenBudget>,
}

/// `--dtype`: a [`ComputeDtype`] by its name (`native`, `f32`; `float32` too).
pub fn compute_dtype(text: &str) -> Result<ComputeDtype, String> {
    text.parse::<ComputeDtype>().map_err(|e| e.to_string())
}

/// `--max-soft-tokens`: a [`SoftTokenBudget`] by its decimal value.
fn budget(text: &str) -> Result<SoftTokenBudget, String> {
    text.parse::<SoftTokenBudget>().map_err(|e| e.to_string())
}
