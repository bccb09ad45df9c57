//! `config.json`: the parts of a gemma4 / gemma4_unified checkpoint's configuration that the
//! vision side reads, with mlx-vlm 0.7.10's defaults (its config dataclasses), validated
//! before anything is allocated.
//!
//! Everything else a release writes is ignored, as the reference's `from_dict` ignores unknown
//! keys: Hugging Face boilerplate (`architectures`, `dtype`, `transformers_version`, …), each
//! sub-config's `model_type`, `audio_config` (null or an object), token ids such as
//! `eoa_token_index`, the language model's settings beyond its width.

use crate::quantization::QuantizationConfig;
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

use crate::ModelType;

/// The configuration of a checkpoint's vision side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelConfig {
    pub model_type: ModelType,
    pub vision: VisionConfig,
    /// The language model's width (`text_config.hidden_size`): the width of the features.
    pub text_hidden_size: i32,
    /// The quantization section (`quantization`, else `quantization_config`), vision entries
    /// only; `None` when the config has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantization: Option<QuantizationConfig>,
    /// `vision_config.skip_vision`: legacy quants that left the vision side dense say so; a
    /// per-module quantization entry then applies only where the checkpoint stores `scales`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skip_vision: bool,
}

/// The vision configuration of either family.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum VisionConfig {
    Siglip(SiglipConfig),
    Unified(UnifiedConfig),
}

/// gemma4's `VisionConfig` (mlx-vlm `models/gemma4/config.py`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SiglipConfig {
    pub hidden_size: i32,
    pub intermediate_size: i32,
    pub num_hidden_layers: i32,
    pub num_attention_heads: i32,
    pub num_key_value_heads: i32,
    pub head_dim: i32,
    pub rms_norm_eps: f64,
    pub rope_parameters: RopeParameters,
    pub default_output_length: i32,
    pub patch_size: i32,
    pub position_embedding_size: i32,
    pub pooling_kernel_size: i32,
    pub use_clipped_linears: bool,
    pub standardize: bool,
}

impl Default for SiglipConfig {
    fn default() -> SiglipConfig {
        SiglipConfig {
            hidden_size: 768,
            intermediate_size: 3072,
            num_hidden_layers: 16,
            num_attention_heads: 12,
            num_key_value_heads: 12,
            head_dim: 64,
            rms_norm_eps: 1e-6,
            rope_parameters: RopeParameters::default(),
            default_output_length: 280,
            patch_size: 16,
            position_embedding_size: 10240,
            pooling_kernel_size: 3,
            use_clipped_linears: false,
            standardize: false,
        }
    }
}

/// `rope_parameters`: only `rope_theta` is used by the vision tower.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RopeParameters {
    pub rope_theta: f64,
}

impl Default for RopeParameters {
    fn default() -> RopeParameters {
        RopeParameters { rope_theta: 100.0 }
    }
}

/// gemma4_unified's `VisionConfig` (mlx-vlm `models/gemma4_unified/config.py`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UnifiedConfig {
    pub patch_size: i32,
    pub pooling_kernel_size: i32,
    /// Side of the square patches the embedder consumes (`patch_size × pooling_kernel_size`).
    pub model_patch_size: i32,
    pub mm_embed_dim: i32,
    pub mm_posemb_size: i32,
    pub num_soft_tokens: i32,
    pub rms_norm_eps: f64,
    pub output_proj_dims: i32,
}

impl Default for UnifiedConfig {
    fn default() -> UnifiedConfig {
        UnifiedConfig {
            patch_size: 16,
            pooling_kernel_size: 3,
            model_patch_size: 48,
            mm_embed_dim: 3840,
            mm_posemb_size: 1120,
            num_soft_tokens: 280,
            rms_norm_eps: 1e-6,
            output_proj_dims: 3840,
        }
    }
}

impl UnifiedConfig {
    /// Values per patch: `model_patch_size² × 3` (saturating at `i32::MAX` for a hand-built
    /// config; [`ModelConfig::parse`] refuses sizes past it).
    pub fn patch_dim(&self) -> i32 {
        self.model_patch_size.saturating_mul(self.model_patch_size).saturating_mul(3)
    }
}

impl ModelConfig {
    /// Reads and validates `config.json`.
    pub fn load(path: &Path) -> Result<ModelConfig> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Checkpoint { path: path.to_path_buf(), detail: format!("cannot read: {e}") })?;
        ModelConfig::parse(&text, path)
    }

    /// Parses and validates the text of a `config.json` (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<ModelConfig> {
        let error =
            |field: &str, detail: String| Error::Config { path: path.to_path_buf(), field: field.to_owned(), detail };
        let json: serde_json::Value =
            serde_json::from_str(text).map_err(|e| error("(document)", format!("invalid JSON: {e}")))?;
        let model_type: ModelType = match json.get("model_type").and_then(|v| v.as_str()) {
            Some(name) => name.parse().map_err(|e: crate::UnknownModelType| error("model_type", e.to_string()))?,
            None => return Err(error("model_type", "missing".into())),
        };
        let vision_json = match json.get("vision_config") {
            None => return Err(error("vision_config", "missing".into())),
            Some(serde_json::Value::Null) => {
                return Err(Error::NoVisionTower {
                    path: path.to_path_buf(),
                    detail: "`vision_config` is null (a text-only conversion)".into(),
                });
            }
            Some(serde_json::Value::Object(fields)) => {
                // A null field means the reference's default (`rope_parameters: null` is
                // replaced in `__post_init__`); serde would refuse it.
                serde_json::Value::Object(
                    fields.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect(),
                )
            }
            Some(_) => return Err(error("vision_config", "not an object".into())),
        };
        let vision_json = &vision_json;
        let family = model_type.family();
        let vision = family.vision_config(vision_json).map_err(|e| error("vision_config", e.to_string()))?;
        let default_text_hidden = family.default_text_hidden_size();
        let text_hidden_size = match json.get("text_config").and_then(|t| t.get("hidden_size")) {
            None => default_text_hidden,
            Some(v) => v
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| error("text_config.hidden_size", format!("{v} is not an integer")))?,
        };
        let quantization = QuantizationConfig::from_json(&json).map_err(|(field, detail)| error(&field, detail))?;
        let skip_vision = match vision_json.get("skip_vision") {
            None => false,
            Some(v) => {
                v.as_bool().ok_or_else(|| error("vision_config.skip_vision", format!("{v} is not a boolean")))?
            }
        };
        let config = ModelConfig { model_type, vision, text_hidden_size, quantization, skip_vision };
        config.validate().map_err(|(field, detail)| error(&field, detail))?;
        Ok(config)
    }

    /// Checks every size and constant the encoders depend on; `Err((field, why))`.
    fn validate(&self) -> std::result::Result<(), (String, String)> {
        positive("text_config.hidden_size", self.text_hidden_size)?;
        match &self.vision {
            VisionConfig::Siglip(c) => {
                for (field, value) in [
                    ("hidden_size", c.hidden_size),
                    ("intermediate_size", c.intermediate_size),
                    ("num_hidden_layers", c.num_hidden_layers),
                    ("num_attention_heads", c.num_attention_heads),
                    ("num_key_value_heads", c.num_key_value_heads),
                    ("head_dim", c.head_dim),
                    ("default_output_length", c.default_output_length),
                    ("patch_size", c.patch_size),
                    ("position_embedding_size", c.position_embedding_size),
                    ("pooling_kernel_size", c.pooling_kernel_size),
                ] {
                    positive(&format!("vision_config.{field}"), value)?;
                }
                if c.head_dim % 4 != 0 {
                    return Err((
                        "vision_config.head_dim".into(),
                        format!(
                            "{} is not divisible by 4 (2D RoPE splits each head into two rotated halves)",
                            c.head_dim
                        ),
                    ));
                }
                if c.num_attention_heads % c.num_key_value_heads != 0 {
                    return Err((
                        "vision_config.num_key_value_heads".into(),
                        format!(
                            "{} does not divide num_attention_heads {}",
                            c.num_key_value_heads, c.num_attention_heads
                        ),
                    ));
                }
                finite_positive("vision_config.rms_norm_eps", c.rms_norm_eps)?;
                finite_positive("vision_config.rope_parameters.rope_theta", c.rope_parameters.rope_theta)?;
                let (p, k) = (c.patch_size, c.pooling_kernel_size);
                derived("vision_config.patch_size", "3 × patch_size²", &[3, p, p])?;
                derived("vision_config.pooling_kernel_size", "pooling_kernel_size²", &[k, k])?;
                let heads = c.num_attention_heads;
                derived("vision_config.head_dim", "num_attention_heads × head_dim", &[heads, c.head_dim])?;
            }
            VisionConfig::Unified(c) => {
                for (field, value) in [
                    ("patch_size", c.patch_size),
                    ("pooling_kernel_size", c.pooling_kernel_size),
                    ("model_patch_size", c.model_patch_size),
                    ("mm_embed_dim", c.mm_embed_dim),
                    ("mm_posemb_size", c.mm_posemb_size),
                    ("num_soft_tokens", c.num_soft_tokens),
                    ("output_proj_dims", c.output_proj_dims),
                ] {
                    positive(&format!("vision_config.{field}"), value)?;
                }
                let cut = i64::from(c.patch_size) * i64::from(c.pooling_kernel_size);
                if i64::from(c.model_patch_size) != cut {
                    return Err((
                        "vision_config.model_patch_size".into(),
                        format!(
                            "{} differs from patch_size × pooling_kernel_size = {cut} (the size the processor cuts)",
                            c.model_patch_size
                        ),
                    ));
                }
                let m = c.model_patch_size;
                derived("vision_config.model_patch_size", "3 × model_patch_size²", &[3, m, m])?;
                if c.mm_embed_dim != c.output_proj_dims {
                    return Err((
                        "vision_config.mm_embed_dim".into(),
                        format!("{} differs from output_proj_dims {}", c.mm_embed_dim, c.output_proj_dims),
                    ));
                }
                finite_positive("vision_config.rms_norm_eps", c.rms_norm_eps)?;
            }
        }
        Ok(())
    }

    /// A canonical JSON rendering (fixed field order), hashed into the cache identity.
    pub fn canonical_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

fn positive(field: &str, value: i32) -> std::result::Result<(), (String, String)> {
    if value > 0 { Ok(()) } else { Err((field.to_owned(), format!("{value} is not a positive size"))) }
}

/// A size the encoders compute from the config (`what`, the product of `factors`) must fit MLX's
/// 32-bit extents; checked in 128 bits so that the check itself cannot overflow.
fn derived(field: &str, what: &str, factors: &[i32]) -> std::result::Result<(), (String, String)> {
    let product: i128 = factors.iter().map(|&f| i128::from(f)).product();
    if product <= i128::from(i32::MAX) {
        Ok(())
    } else {
        Err((field.to_owned(), format!("{what} = {product} exceeds the largest array extent ({})", i32::MAX)))
    }
}

fn finite_positive(field: &str, value: f64) -> std::result::Result<(), (String, String)> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err((field.to_owned(), format!("{value} is not a positive finite number")))
    }
}
