//! Arbitrary text -> `vision::ModelConfig::parse` (a checkpoint's `config.json`). Every input
//! must end in `Ok` or a typed `Err` naming the file and the field; a panic is a finding.
//!
//! An accepted config must be one the encoders can serve, and parsing must be a fixed point:
//! the accepted values, written back as a `config.json`, parse to the same config.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use vision::{ModelConfig, ModelType, VisionConfig};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = Path::new("fuzz/config.json");
    let config = match ModelConfig::parse(text, path) {
        Ok(config) => config,
        Err(vision::Error::Config { path: named, field, .. }) => {
            assert_eq!(named, path);
            assert!(!field.is_empty());
            return;
        }
        Err(vision::Error::NoVisionTower { path: named, .. }) => {
            assert_eq!(named, path);
            return;
        }
        Err(other) => panic!("ModelConfig::parse returned a non-config error: {other}"),
    };
    assert!(config.text_hidden_size > 0);
    match (&config.vision, config.model_type) {
        (VisionConfig::Siglip(c), ModelType::Gemma4) => {
            assert!(c.hidden_size > 0 && c.head_dim % 4 == 0 && c.num_attention_heads % c.num_key_value_heads == 0);
        }
        (VisionConfig::Unified(c), ModelType::Gemma4Unified) => {
            assert_eq!(c.model_patch_size, c.patch_size * c.pooling_kernel_size);
        }
        (vision, model_type) => panic!("{model_type:?} parsed with {vision:?}"),
    }
    let mut vision = serde_json::to_value(&config.vision).expect("a config renders");
    vision["skip_vision"] = config.skip_vision.into();
    let quantization = config.quantization.as_ref().map(|q| {
        let mut section = serde_json::json!({ "group_size": q.group_size, "bits": q.bits, "mode": q.mode });
        for (module, entry) in &q.modules {
            section[module] = serde_json::to_value(entry).expect("an entry renders");
        }
        section
    });
    let rendered = serde_json::json!({
        "model_type": config.model_type,
        "vision_config": vision,
        "text_config": { "hidden_size": config.text_hidden_size },
        "quantization": quantization,
    });
    let again = ModelConfig::parse(&rendered.to_string(), path).expect("an accepted config re-parses");
    assert_eq!(again, config);
});
