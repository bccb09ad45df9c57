//! Arguments shared by several subcommands.

use clap::Args;
use vision::{ComputeDtype, ModelSource, SoftTokenBudget};

/// The checkpoint and the soft-token budget.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// The model: a directory (config.json, model.safetensors or shards with an index,
    /// optionally processor_config.json), or a Hugging Face Hub repository, ORG/NAME[@REVISION]
    /// (found in the Hugging Face cache, else only its vision tensors fetched; HF_ENDPOINT,
    /// HF_HOME, HF_TOKEN and HF_HUB_OFFLINE apply). An existing path is a directory.
    #[arg(long, value_name = "DIR|ORG/NAME[@REV]", value_parser = model_source)]
    pub model: ModelSource,
    /// The soft-token budget per image [default: processor_config.json's, else 280].
    #[arg(long, value_name = "N", value_parser = budget, allow_negative_numbers = true)]
    pub max_soft_tokens: Option<SoftTokenBudget>,
}

/// `--model`: a [`ModelSource`] ([`ModelSource::parse`]).
fn model_source(text: &str) -> Result<ModelSource, String> {
    Ok(ModelSource::parse(text))
}

/// `--dtype`: a [`ComputeDtype`] by its name (`native`, `f32`; `float32` too).
pub fn compute_dtype(text: &str) -> Result<ComputeDtype, String> {
    text.parse::<ComputeDtype>().map_err(|e| e.to_string())
}

/// `--max-soft-tokens`: a [`SoftTokenBudget`] by its decimal value.
fn budget(text: &str) -> Result<SoftTokenBudget, String> {
    text.parse::<SoftTokenBudget>().map_err(|e| e.to_string())
}
