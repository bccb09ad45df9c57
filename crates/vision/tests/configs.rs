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
