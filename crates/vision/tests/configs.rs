//! `config.json` as releases write it (boilerplate, null fields, audio configs, quantization
//! sections, text-only quants), and values whose derived sizes would overflow MLX's 32-bit
//! extents as named errors.

extern crate gemma_vision_encoder as vision;

use std::path::Path;
use vision::{Error, ModelConfig};

/// Found by `fuzz/fuzz_targets/model_config.rs`: the products used to overflow (a panic in debug
/// builds, a wrapped value in release).
#[test]
fn sizes_derived_past_i32_are_config_errors() {
    let cases = [
        (
            r#"{"model_type": "gemma4_unified", "vision_config": {"patch_size": 999999924}}"#,
            "vision_config.model_patch_size",
            "differs from patch_size × pooling_kernel_size = 2999999772",
        ),
        (
            r#"{"model_type": "gemma4_unified", "vision_config": {"patch_size": 20000, "pooling_kernel_size": 2, "model_patch_size": 40000}}"#,
            "vision_config.model_patch_size",
            "3 × model_patch_size² = 4800000000 exceeds the largest array extent (2147483647)",
        ),
        (
            r#"{"model_type": "gemma4", "vision_config": {"patch_size": 30000}}"#,
            "vision_config.patch_size",
            "3 × patch_size² = 2700000000",
        ),
        (
            r#"{"model_type": "gemma4", "vision_config": {"pooling_kernel_size": 50000}}"#,
            "vision_config.pooling_kernel_size",
            "pooling_kernel_size² = 2500000000",
        ),
        (
            r#"{"model_type": "gemma4", "vision_config": {"num_attention_heads": 65536, "num_key_value_heads": 1, "head_dim": 65536}}"#,
            "vision_config.head_dim",
            "num_attention_heads × head_dim = 4294967296",
        ),
    ];
    for (text, field, detail) in cases {
        match ModelConfig::parse(text, Path::new("m/config.json")) {
            Err(Error::Config { path, field: f, detail: d }) => {
                assert_eq!(path, Path::new("m/config.json"));
                assert_eq!(f, field, "{text}");
                assert!(d.contains(detail), "{text}: {d}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    // The largest sizes that fit are accepted.
    let fits = r#"{"model_type": "gemma4", "vision_config": {"patch_size": 26754, "pooling_kernel_size": 46340}}"#;
    assert!(ModelConfig::parse(fits, Path::new("config.json")).is_ok());
}

/// Floats are read correctly rounded, as Python's `json` reads them for the reference, so an
/// accepted config written back parses to the same values. Found by
/// `fuzz/fuzz_targets/model_config.rs`: `1e-25` was read one ulp low (9.999999999999999e-26),
/// and the value written back then read as a different number.
#[test]
fn floats_parse_correctly_rounded_and_round_trip() {
    let text = r#"{"model_type": "gemma4", "vision_config": {"rms_norm_eps": 1e-25,
        "rope_parameters": {"rope_theta": 1.0000000000000002e23}}}"#;
    let config = ModelConfig::parse(text, Path::new("config.json")).unwrap();
    let vision::VisionConfig::Siglip(siglip) = &config.vision else { panic!("gemma4 is a SigLIP tower") };
    assert_eq!(siglip.rms_norm_eps.to_bits(), 1e-25f64.to_bits());
    assert_eq!(siglip.rope_parameters.rope_theta.to_bits(), 1.0000000000000002e23f64.to_bits());
    let rendered = serde_json::json!({
        "model_type": config.model_type,
        "vision_config": config.vision,
        "text_config": { "hidden_size": config.text_hidden_size },
    });
    assert_eq!(ModelConfig::parse(&rendered.to_string(), Path::new("config.json")).unwrap(), config);
    // The processor config's floats too.
    let processor = r#"{"image_processor": {"rescale_factor": 0.0039215686274509803921568627}}"#;
    let parsed =
        preprocess::ProcessorConfig::from_json(processor, vision::ModelType::Gemma4.family().settings_layout())
            .unwrap();
    assert_eq!(parsed.rescale_factor.to_bits(), (1.0f64 / 255.0).to_bits());
}

/// A gemma4 `config.json` as a Google release writes it: Hugging Face boilerplate, a
/// `model_type` per sub-config, null dtypes and null optional fields, an audio config, token ids.
const RELEASE_GEMMA4: &str = r#"{
  "architectures": ["Gemma4ForConditionalGeneration"],
  "audio_config": {"model_type": "gemma4_audio", "hidden_size": 1024, "dtype": null, "use_clipped_linears": true},
  "audio_token_id": 258881, "boa_token_id": 256000, "boi_token_id": 255999, "dtype": "bfloat16",
  "eoa_token_index": 258883, "eoi_token_id": 258882, "eos_token_id": [1, 106], "image_token_id": 258880,
  "initializer_range": 0.02, "model_type": "gemma4",
  "text_config": {"model_type": "gemma4_text", "dtype": null, "hidden_size": 1536, "num_hidden_layers": 35,
    "layer_types": ["sliding_attention", "full_attention"], "num_experts": null, "top_k_experts": null,
    "rope_parameters": {"full_attention": {"rope_theta": 1000000.0, "rope_type": "proportional"}}},
  "tie_word_embeddings": true, "transformers_version": "5.5.0.dev0",
  "video_token_id": 258884, "vision_soft_tokens_per_image": 280,
  "vision_config": {"model_type": "gemma4_vision", "dtype": null, "attention_bias": false, "attention_dropout": 0.0,
    "global_head_dim": 64, "head_dim": 64, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072, "layer_types": null, "max_position_embeddings": 131072,
    "num_attention_heads": 12, "num_hidden_layers": 16, "num_key_value_heads": 12, "patch_size": 16,
    "pooling_kernel_size": 3, "position_embedding_size": 10240, "rms_norm_eps": 1e-06,
    "rope_parameters": {"rope_theta": 100.0, "rope_type": "default"}, "standardize": false,
    "use_bidirectional_attention": "vision", "use_clipped_linears": true}
}"#;

/// A gemma4_unified (12B) release config: `eoa_token_index` without `eoa_token_id`.
const RELEASE_UNIFIED: &str = r#"{
  "architectures": ["Gemma4UnifiedForConditionalGeneration"], "dtype": "bfloat16", "model_type": "gemma4_unified",
  "audio_config": {"model_type": "gemma4_unified_audio", "audio_embed_dim": 640, "hidden_size": 640},
  "eoa_token_index": 258883, "image_token_id": 258880, "video_token_id": 258884,
  "text_config": {"model_type": "gemma4_unified_text", "hidden_size": 3840, "num_hidden_layers": 48,
    "moe_intermediate_size": null, "top_k_experts": null},
  "vision_config": {"mm_embed_dim": 3840, "mm_posemb_size": 1120, "model_patch_size": 48,
    "model_type": "gemma4_unified_vision", "num_soft_tokens": 280, "output_proj_dims": 3840, "patch_size": 16,
    "pooling_kernel_size": 3, "rms_norm_eps": 1e-6, "initializer_range": 0.02, "dtype": null},
  "transformers_version": "5.6.0"
}"#;

fn parse(text: &str) -> ModelConfig {
    ModelConfig::parse(text, Path::new("config.json")).unwrap_or_else(|e| panic!("{e}"))
}

fn with(text: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut json: serde_json::Value = serde_json::from_str(text).unwrap();
    edit(&mut json);
    json.to_string()
}

#[test]
fn release_configs_parse_with_their_boilerplate() {
    let config = parse(RELEASE_GEMMA4);
    assert_eq!(config.model_type, vision::ModelType::Gemma4);
    assert_eq!(config.text_hidden_size, 1536);
    assert_eq!(config.quantization, None);
    let vision::VisionConfig::Siglip(siglip) = &config.vision else { panic!("gemma4") };
    assert_eq!(
        (siglip.hidden_size, siglip.num_hidden_layers, siglip.head_dim, siglip.use_clipped_linears),
        (768, 16, 64, true)
    );
    assert_eq!(siglip.rope_parameters.rope_theta, 100.0);
    // The audio config as null, or absent; text-config fields beyond the width are not read.
    for edit in [
        Box::new(|j: &mut serde_json::Value| j["audio_config"] = serde_json::Value::Null) as Box<dyn Fn(&mut _)>,
        Box::new(|j: &mut serde_json::Value| drop(j.as_object_mut().unwrap().remove("audio_config"))),
        Box::new(|j: &mut serde_json::Value| j["text_config"]["rope_parameters"] = serde_json::Value::Null),
    ] {
        assert_eq!(parse(&with(RELEASE_GEMMA4, edit)), config);
    }
    // A null vision field means the reference's default (`rope_parameters: null` becomes theta 100).
    let nulled = parse(&with(RELEASE_GEMMA4, |j| j["vision_config"]["rope_parameters"] = serde_json::Value::Null));
    assert_eq!(nulled, config);

    let unified = parse(RELEASE_UNIFIED);
    assert_eq!(unified.model_type, vision::ModelType::Gemma4Unified);
    assert_eq!(unified.text_hidden_size, 3840);
    let vision::VisionConfig::Unified(u) = &unified.vision else { panic!("gemma4_unified") };
    assert_eq!((u.mm_embed_dim, u.model_patch_size, u.num_soft_tokens), (3840, 48, 280));
    assert_eq!(parse(&with(RELEASE_UNIFIED, |j| j["audio_config"] = serde_json::Value::Null)), unified);
}

#[test]
fn a_text_only_quant_has_no_vision_tower() {
    for text in [RELEASE_GEMMA4, RELEASE_UNIFIED] {
        let text = with(text, |j| j["vision_config"] = serde_json::Value::Null);
        match ModelConfig::parse(&text, Path::new("m/config.json")) {
            Err(Error::NoVisionTower { path, detail }) => {
                assert_eq!(path, Path::new("m/config.json"));
                assert!(detail.contains("`vision_config` is null"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn the_quantization_section_keeps_its_defaults_and_the_vision_entries() {
    let section = serde_json::json!({
        "group_size": 64, "bits": 4, "mode": "affine",
        "language_model.model.layers.0.mlp.down_proj": {"group_size": 64, "bits": 8},
        "embed_vision.embedding_projection": {"group_size": 64, "bits": 8},
        "vision_tower.encoder.layers.0.self_attn.q_proj.linear": {"group_size": 32, "bits": 4, "mode": "mxfp4"},
        "vision_embedder.patch_dense": false,
        "vision_tower.encoder.layers.1.mlp.up_proj.linear": true,
    });
    let config = parse(&with(RELEASE_GEMMA4, |j| j["quantization"] = section.clone()));
    let q = config.quantization.clone().unwrap();
    assert_eq!((q.group_size, q.bits, q.mode.as_deref()), (Some(64), Some(4), Some("affine")));
    use vision::ModuleQuantization::{Dense, Params};
    let expected = std::collections::BTreeMap::from([
        ("embed_vision.embedding_projection".to_owned(), Params { group_size: Some(64), bits: Some(8), mode: None }),
        (
            "vision_tower.encoder.layers.0.self_attn.q_proj.linear".to_owned(),
            Params { group_size: Some(32), bits: Some(4), mode: Some("mxfp4".into()) },
        ),
        ("vision_embedder.patch_dense".to_owned(), Dense(false)),
    ]);
    assert_eq!(q.modules, expected, "language-model entries and non-dict values are not kept");
    // `quantization_config` alone is the same section; beside `quantization` it is not read.
    assert_eq!(parse(&with(RELEASE_GEMMA4, |j| j["quantization_config"] = section.clone())), config);
    let both = with(RELEASE_GEMMA4, |j| {
        j["quantization"] = section.clone();
        j["quantization_config"] = serde_json::json!({"group_size": 32, "bits": 2});
    });
    assert_eq!(parse(&both), config);
    // Nulls are MLX's defaults for the mode.
    let nulls =
        parse(&with(RELEASE_GEMMA4, |j| j["quantization"] = serde_json::json!({"group_size": null, "bits": null})));
    let q = nulls.quantization.unwrap();
    assert_eq!((q.group_size, q.bits, q.mode), (None, None, None));
    // The section is part of the config's canonical rendering, which the cache identity hashes.
    let rendered = serde_json::to_value(&config).unwrap();
    assert_eq!(rendered["quantization"]["modules"]["vision_embedder.patch_dense"], false);
}

#[test]
fn malformed_quantization_values_name_the_field() {
    let cases = [
        (serde_json::json!(4), "quantization", "not an object"),
        (serde_json::json!({"group_size": "64"}), "quantization.group_size", "not an integer"),
        (serde_json::json!({"bits": 4.5}), "quantization.bits", "not an integer"),
        (serde_json::json!({"mode": 3}), "quantization.mode", "not a string"),
        (
            serde_json::json!({"embed_vision.embedding_projection": {"bits": "8"}}),
            "quantization.embed_vision.embedding_projection.bits",
            "not an integer",
        ),
    ];
    for (section, field, detail) in cases {
        let text = with(RELEASE_GEMMA4, |j| j["quantization"] = section.clone());
        match ModelConfig::parse(&text, Path::new("config.json")) {
            Err(Error::Config { field: f, detail: d, .. }) => {
                assert_eq!(f, field, "{section}");
                assert!(d.contains(detail), "{section}: {d}");
            }
            other => panic!("{section}: {other:?}"),
        }
    }
    let skip = with(RELEASE_GEMMA4, |j| j["vision_config"]["skip_vision"] = serde_json::json!("yes"));
    assert!(matches!(
        ModelConfig::parse(&skip, Path::new("config.json")),
        Err(Error::Config { field, .. }) if field == "vision_config.skip_vision"
    ));
    assert!(parse(&with(RELEASE_GEMMA4, |j| j["vision_config"]["skip_vision"] = true.into())).skip_vision);
}
