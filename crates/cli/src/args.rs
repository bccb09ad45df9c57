//! Arguments shared by several subcommands.

use clap::{Args, ValueEnum};
use std::path::PathBuf;
use vision::ComputeDtype;

/// The checkpoint and the soft-token budget.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// The model directory: config.json, model.safetensors (or shards with an index),
    /// optionally processor_config.json.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// The soft-token budget per image [default: processor_config.json's, else 280].
    #[arg(long, value_name = "N", value_parser = positive_budget, allow_negative_numbers = true)]
    pub max_soft_tokens: Option<u32>,
}

/// The dtype the encoder computes in.
#[derive(Debug, Clone, Copy, Default, ValueEnum)]
pub enum DtypeArg {
    /// The checkpoint's own dtype (bf16 for published checkpoints).
    #[default]
    Native,
    /// Weights cast to float32 once at load: what mlx-vlm computes on the model cast to float32.
    #[value(alias = "float32")]
    F32,
}

impl From<DtypeArg> for ComputeDtype {
    fn from(dtype: DtypeArg) -> ComputeDtype {
        match dtype {
            DtypeArg::Native => ComputeDtype::Native,
            DtypeArg::F32 => ComputeDtype::F32,
        }
    }
}

/// A positive soft-token budget.
fn positive_budget(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(0) => Err("--max-soft-tokens must be positive".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a positive integer")),
    }
}
