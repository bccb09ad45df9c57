//! `config.json` values whose derived sizes (patch vectors, head widths, pooling windows) would
//! overflow MLX's 32-bit extents are named errors. Found by `fuzz/fuzz_targets/model_config.rs`:
//! the products used to overflow (a panic in debug builds, a wrapped value in release).

use std::path::Path;
use vision::{Error, ModelConfig};

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
    let parsed = preprocess::ProcessorConfig::from_json(processor, preprocess::ModelFamily::Gemma4).unwrap();
    assert_eq!(parsed.rescale_factor.to_bits(), (1.0f64 / 255.0).to_bits());
}
