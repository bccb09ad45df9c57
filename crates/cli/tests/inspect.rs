//! `gemma-vision inspect` on the checked-in checkpoints: the JSON form is exactly the library's
//! `vision::Inspection`, the text form shows every fact, and a refused checkpoint is one
//! `error:` line naming why.

mod common;

use common::{fixture, temp_dir};
use std::fs;
use std::process::{Command, Output};
use vision::{CacheIdentity, EncoderOptions, Inspection, VisionEncoder};

fn gemma_vision(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gemma-vision")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = gemma_vision(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn model(case: &str) -> String {
    fixture(case).join("model").display().to_string()
}

#[test]
fn the_json_form_is_the_library_inspection() {
    for (case, budget, size) in [
        ("q-legacy-affine4", None, None),
        ("q-unified-mxfp4", Some(7), Some((640, 480))),
        ("tiny-f32", None, Some((9, 9))),
    ] {
        let dir = model(case);
        let mut args = vec!["inspect", "--model", &dir, "--json"];
        let budget_arg = budget.map(|b: u32| b.to_string());
        if let Some(b) = &budget_arg {
            args.extend(["--max-soft-tokens", b]);
        }
        let size_arg = size.map(|(w, h): (u32, u32)| format!("{w}x{h}"));
        if let Some(s) = &size_arg {
            args.extend(["--image-size", s]);
        }
        let printed = ok(&args);
        let encoder = VisionEncoder::load(&dir, EncoderOptions::default()).unwrap();
        let expected =
            Inspection::of(&encoder, budget.map(|b| vision::SoftTokenBudget::new(b).unwrap()), size).unwrap();
        assert_eq!(printed, format!("{}\n", expected.to_json()), "{case}");
        let json: serde_json::Value = serde_json::from_str(&printed).unwrap();
        assert_eq!(json["cache_identity"], encoder.cache_identity().unwrap(), "{case}");
        assert_eq!(json["budget"]["source"], if budget.is_some() { "flag" } else { "processor_config.json" }, "{case}");
        assert_eq!(json["image"].is_null(), size.is_none(), "{case}");
    }
    // The facts of a published-style quant: its shards and index, the quantized projector,
    // the language model it does not read.
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", "--model", &model("q-legacy-affine4"), "--json"])).unwrap();
    assert_eq!(json["model_type"], "gemma4");
    // The MLX the command runs on: the release mlx-c was built for, and its libmlx file.
    assert_eq!(json["mlx"]["version"], tensor::info::mlx_version().unwrap());
    assert_eq!(json["mlx"]["version"].as_str().unwrap(), tensor::info::mlx_build_version());
    assert!(json["mlx"]["library"].as_str().unwrap().ends_with("/lib/libmlx.so"));
    // Who runs the ops: on the proven x86-64 wheel the host kernels, elsewhere MLX's ops, with why.
    let kernels = json["kernels"].as_str().unwrap();
    let expected = if layers::HostParity::here().is_proven() {
        "the host kernels, proven bit-identical on"
    } else {
        "MLX's ops: "
    };
    assert!(kernels.starts_with(expected), "{kernels}");
    assert_eq!(json["feature_width"], 64);
    assert_eq!(json["feature_dtype"], "bfloat16");
    assert!(json["index_file"].as_str().unwrap().ends_with("model.safetensors.index.json"));
    assert_eq!(json["weight_files"].as_array().unwrap().len(), 2);
    assert_eq!(
        json["quantized_modules"],
        serde_json::json!([{"module": "embed_vision.embedding_projection", "mode": "affine", "bits": 4, "group_size": 64}])
    );
    assert!(json["tensors"]["ignored"]["language_model"].as_u64().unwrap() > 0);
    assert_eq!(json["tensors"]["ignored"]["audio"], 0);
    let unified: serde_json::Value = serde_json::from_str(&ok(&[
        "inspect",
        "--model",
        &model("q-unified-mxfp4"),
        "--json",
        "--image-size",
        "640x480",
        "--max-soft-tokens",
        "7",
    ]))
    .unwrap();
    assert_eq!(unified["feature_dtype"], "float32");
    assert_eq!(unified["budget"], serde_json::json!({"max_soft_tokens": 7, "source": "flag", "max_patches": 28}));
    // 640×480 at 7 tokens of 16×16 pixels: factor √(28·8²/(640·480)) = 0.0764, so 48×32, 3 × 2 tokens.
    assert_eq!(unified["image"], serde_json::json!({"input": [640, 480], "resized": [48, 32], "soft_tokens": 6}));
    assert!(unified["tensors"]["ignored"]["audio"].as_u64().unwrap() > 0, "the unified model's audio embedder");
}

#[test]
fn the_text_form_shows_every_fact() {
    let text = ok(&["inspect", "--model", &model("q-affine-mixed-f32"), "--image-size", "37x23"]);
    let labels: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().next()).collect();
    for label in
        ["model", "vision", "features", "weights", "quantized", "budget", "image", "tensors", "cache", "mlx", "kernels"]
    {
        assert!(labels.contains(&label), "{label} missing from:\n{text}");
    }
    assert!(text.contains("SigLIP tower: 2 layers, width 64"), "{text}");
    assert!(text.contains("vision_tower.encoder.layers.0.self_attn.k_proj.linear: affine 2 bits, group 64"), "{text}");
    assert!(text.contains("vision_tower.encoder.layers.1.mlp.up_proj.linear: mxfp4 4 bits, group 32"), "{text}");
    assert!(text.contains("embed_vision.embedding_projection: affine 8 bits, group 64"), "{text}");
    assert!(text.contains("6 soft tokens (processor_config.json)"), "{text}");
    // Patches of 4, a pool of 3, 54 patches: factor √(54·4²/(37·23)) = 1.0076, so 36×12, 3 tokens.
    assert!(text.contains("37x23 → 36x12: 3 soft tokens"), "{text}");
    assert_eq!(text.lines().filter(|l| l.contains(": affine ") || l.contains(": mxfp4 ")).count(), 15, "{text}");
    let dense = ok(&["inspect", "--model", &model("tiny-clipped")]);
    assert!(dense.lines().any(|l| l.starts_with("quantized") && l.ends_with(" none")), "{dense}");
}

#[test]
fn a_refused_checkpoint_is_one_error_line_saying_why() {
    let dir = temp_dir("inspect-text-only");
    for entry in fs::read_dir(fixture("q-legacy-affine4").join("model")).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let config = dir.join("config.json");
    let mut json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&config).unwrap()).unwrap();
    json["vision_config"] = serde_json::Value::Null;
    fs::write(&config, json.to_string()).unwrap();
    for args in
        [vec!["inspect", "--model", dir.to_str().unwrap()], vec!["inspect", "--model", dir.to_str().unwrap(), "--json"]]
    {
        let out = gemma_vision(&args);
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: ") && stderr.contains("the checkpoint has no vision tower"), "{stderr}");
    }
    for bad in ["640", "0x480", "640x", "axb"] {
        let out = gemma_vision(&["inspect", "--model", &model("tiny-clipped"), "--image-size", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains("is not WIDTHxHEIGHT"), "{bad}: {stderr}");
    }
}

/// docs/USAGE.md shows `inspect`'s output on a test checkpoint; it must stay what the command
/// prints (the libmlx path up to the environment's `site-packages/` shown as `…/`).
#[test]
fn the_usage_guide_shows_what_the_command_prints() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = fs::read_to_string(root.join("docs/USAGE.md")).unwrap();
    let command =
        "$ gemma-vision inspect --model crates/vision/tests/fixtures/q-legacy-affine4/model --image-size 640x480\n";
    let start = readme.find(command).expect("docs/USAGE.md's inspect example") + command.len();
    let shown = &readme[start..start + readme[start..].find("```").unwrap()];
    let out = Command::new(env!("CARGO_BIN_EXE_gemma-vision"))
        .current_dir(&root)
        .args(["inspect", "--model", "crates/vision/tests/fixtures/q-legacy-affine4/model", "--image-size", "640x480"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).unwrap();
    let library = tensor::info::mlx_library().unwrap().display().to_string();
    let elided = match library.find("site-packages/") {
        Some(at) => format!("…/{}", &library[at..]),
        None => library.clone(),
    };
    assert_eq!(printed.replace(&library, &elided), shown, "update docs/USAGE.md's inspect example");
}
