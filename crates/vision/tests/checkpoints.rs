//! Checkpoint layouts load alike; every malformed checkpoint is a named error.

extern crate gemma_vision_encoder as vision;

mod common;

use common::{budget_of, bytes, fixture, image, load, model_copy, rewrite_weights, temp_dir};
use std::fs;
use std::path::Path;
use tensor::{Array, Dtype};
use vision::{EncoderOptions, Error, VisionEncoder};

fn features(dir: &Path) -> Vec<u8> {
    let paths = [image("tiny-clipped", "gradient-37x23.png"), image("tiny-clipped", "noise-20x30.png")];
    bytes(&load(dir).encode_files(&paths, budget_of(6)).unwrap().features)
}

fn load_err(dir: &Path) -> Error {
    VisionEncoder::load(dir, EncoderOptions::default()).unwrap_err()
}

/// The fixture's tensors under sanitized names (its file stores raw `model.`-prefixed names).
fn sanitized_tensors() -> Vec<(String, Array)> {
    let raw = tensor::load_safetensors(fixture("tiny-clipped").join("model/model.safetensors")).unwrap();
    assert!(raw.keys().all(|k| k.starts_with("model.")), "the fixture stores raw Hugging Face names");
    raw.into_iter().map(|(k, v)| (k.trim_start_matches("model.").to_owned(), v)).collect()
}

fn save(path: &Path, tensors: &[(String, Array)]) {
    let refs: Vec<(&str, &Array)> = tensors.iter().map(|(n, a)| (n.as_str(), a)).collect();
    tensor::save_safetensors(path, &refs, None).unwrap();
}

#[test]
fn raw_sanitized_sharded_and_sidecar_layouts_give_identical_features() {
    let original = features(&fixture("tiny-clipped").join("model"));
    let tensors = sanitized_tensors();

    let sanitized = model_copy("tiny-clipped", "sanitized");
    save(&sanitized.join("model.safetensors"), &tensors);
    assert_eq!(features(&sanitized), original, "sanitized single file");

    let sharded = model_copy("tiny-clipped", "sharded");
    fs::remove_file(sharded.join("model.safetensors")).unwrap();
    let (first, second) = tensors.split_at(tensors.len() / 2);
    let raw = |t: &[(String, Array)]| t.iter().map(|(n, a)| (format!("model.{n}"), a.clone())).collect::<Vec<_>>();
    save(&sharded.join("model-00001-of-00002.safetensors"), &raw(first));
    save(&sharded.join("model-00002-of-00002.safetensors"), &raw(second));
    let mut map = serde_json::Map::new();
    for (name, _) in raw(first) {
        map.insert(name, "model-00001-of-00002.safetensors".into());
    }
    for (name, _) in raw(second) {
        map.insert(name, "model-00002-of-00002.safetensors".into());
    }
    // A language-model tensor in a shard that is not there: never read for vision.
    map.insert("model.language_model.layers.0.weight".into(), "model-00003-of-00003.safetensors".into());
    let index = serde_json::json!({ "metadata": {}, "weight_map": map });
    fs::write(sharded.join("model.safetensors.index.json"), index.to_string()).unwrap();
    assert_eq!(features(&sharded), original, "sharded raw names");

    let sidecar = model_copy("tiny-clipped", "sidecar");
    fs::remove_file(sidecar.join("model.safetensors")).unwrap();
    save(&sidecar.join("optiq_vision.safetensors"), &tensors);
    assert_eq!(features(&sidecar), original, "vision-only sidecar");
}

#[test]
fn the_budget_comes_from_the_flag_then_the_processor_config_then_280() {
    let dir = model_copy("tiny-clipped", "budget");
    let one = [image("tiny-clipped", "gradient-37x23.png")];
    let encoder = load(&dir);
    assert_eq!(encoder.processor_config().max_soft_tokens, 6, "from processor_config.json");
    assert_eq!(encoder.encode_files(&one, None).unwrap().soft_tokens, [3]);
    assert_eq!(encoder.encode_files(&one, budget_of(24)).unwrap().soft_tokens, [18]);
    fs::remove_file(dir.join("processor_config.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    assert_eq!(json["vision_config"]["patch_size"], 4);
    // Without a processor config the reference's defaults apply (patch 16, budget 280).
    assert_eq!(load(&dir).processor_config().max_soft_tokens, 280);
}

#[test]
fn missing_wrong_shaped_and_wrong_dtype_tensors_are_named() {
    let key = "model.vision_tower.encoder.layers.1.self_attn.k_proj.linear.weight";
    let sanitized = key.trim_start_matches("model.");

    let dir = model_copy("tiny-clipped", "missing");
    rewrite_weights(&dir, |t| t.retain(|(n, _)| n != key));
    let err = load_err(&dir);
    assert!(
        matches!(&err, Error::Weight { source: layers::Error::Missing { name }, .. } if name == sanitized),
        "{err}"
    );
    assert!(err.to_string().contains(sanitized), "{err}");

    let dir = model_copy("tiny-clipped", "shape");
    rewrite_weights(&dir, |t| {
        let (_, w) = t.iter_mut().find(|(n, _)| n == key).unwrap();
        *w = w.slice_axis(0, 0, 4).unwrap();
    });
    let err = load_err(&dir);
    match &err {
        Error::Weight { source: layers::Error::Shape { name, expected, actual }, .. } => {
            assert_eq!(name, sanitized);
            assert_eq!(expected, &[16, 32]);
            assert_eq!(actual, &[4, 32]);
        }
        other => panic!("unexpected {other}"),
    }

    let dir = model_copy("tiny-clipped", "dtype");
    rewrite_weights(&dir, |t| {
        let (_, w) = t.iter_mut().find(|(n, _)| n == key).unwrap();
        *w = w.astype(Dtype::I32).unwrap();
    });
    let err = load_err(&dir);
    assert!(
        matches!(&err, Error::Weight { source: layers::Error::Dtype { name, .. }, .. } if name == sanitized),
        "{err}"
    );
}

#[test]
fn unused_vision_tensors_are_an_error_and_others_are_ignored() {
    let dir = model_copy("tiny-clipped", "unused");
    rewrite_weights(&dir, |t| {
        t.push((
            "model.vision_tower.encoder.layers.7.mlp.extra.weight".into(),
            Array::ones(&[2], Dtype::Bf16).unwrap(),
        ));
        t.push(("model.language_model.embed_tokens.weight".into(), Array::ones(&[4, 4], Dtype::Bf16).unwrap()));
        t.push(("model.language_model.rotary_emb.inv_freq".into(), Array::ones(&[4], Dtype::F32).unwrap()));
    });
    let err = load_err(&dir);
    match &err {
        Error::Layers(layers::Error::Unused { names }) => {
            assert_eq!(names, &["vision_tower.encoder.layers.7.mlp.extra.weight"]);
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn a_tensor_stored_under_its_raw_and_its_sanitized_name_is_refused() {
    let dir = model_copy("tiny-clipped", "duplicate");
    let name = "vision_tower.patch_embedder.input_proj.weight";
    rewrite_weights(&dir, |t| {
        let raw = t.iter().find(|(n, _)| n == &format!("model.{name}")).expect("the fixture has it").1.clone();
        t.push((name.into(), raw));
    });
    match load_err(&dir) {
        Error::DuplicateTensor { name: key, first, second } => {
            assert_eq!(key, name);
            let mut stored = [first, second];
            stored.sort();
            assert_eq!(stored, [format!("model.{name}"), name.to_owned()]);
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn clip_bounds_follow_the_config() {
    // With use_clipped_linears false the reference's sanitize drops the bounds: they are
    // neither read nor "unused".
    let dir = model_copy("tiny-clipped", "unclipped");
    let path = dir.join("config.json");
    let mut json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    json["vision_config"]["use_clipped_linears"] = false.into();
    fs::write(&path, json.to_string()).unwrap();
    let encoder = load(&dir);
    let out = encoder.encode_files(&[image("tiny-clipped", "noise-20x30.png")], budget_of(6)).unwrap();
    assert_eq!(out.soft_tokens, [6]);
}

#[test]
fn truncated_and_garbage_weight_files_are_errors() {
    let dir = model_copy("tiny-clipped", "truncated");
    let path = dir.join("model.safetensors");
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = load_err(&dir);
    assert!(matches!(&err, Error::Tensor(tensor::Error::Format { .. })), "{err}");
    assert!(err.to_string().contains("model.safetensors"), "{err}");

    fs::write(&path, b"not a safetensors file at all").unwrap();
    assert!(matches!(load_err(&dir), Error::Tensor(tensor::Error::Format { .. })));
}

#[test]
fn bad_directories_and_configs_are_named_errors() {
    let missing = temp_dir("no-such").join("nothing-here");
    assert!(matches!(load_err(&missing), Error::Checkpoint { .. }));

    let empty = temp_dir("empty");
    let err = load_err(&empty);
    assert!(matches!(&err, Error::Checkpoint { path, .. } if path.ends_with("config.json")), "{err}");

    let no_weights = model_copy("tiny-clipped", "no-weights");
    fs::remove_file(no_weights.join("model.safetensors")).unwrap();
    let err = load_err(&no_weights);
    assert!(matches!(&err, Error::Checkpoint { detail, .. } if detail.contains("no weights")), "{err}");

    let cases: Vec<(&str, &str, &str)> = vec![
        ("{ not json", "(document)", "invalid JSON"),
        (r#"{"vision_config": {}}"#, "model_type", "missing"),
        (r#"{"model_type": "llama", "vision_config": {}}"#, "model_type", "llama"),
        (r#"{"model_type": "gemma4"}"#, "vision_config", "missing"),
        (r#"{"model_type": "gemma4", "vision_config": 3}"#, "vision_config", "not an object"),
        (r#"{"model_type": "gemma4", "vision_config": {"head_dim": 70}}"#, "vision_config.head_dim", "divisible by 4"),
        (r#"{"model_type": "gemma4", "vision_config": {"hidden_size": -8}}"#, "vision_config.hidden_size", "-8"),
        (
            r#"{"model_type": "gemma4", "vision_config": {"num_key_value_heads": 5}}"#,
            "vision_config.num_key_value_heads",
            "divide",
        ),
        (
            r#"{"model_type": "gemma4", "vision_config": {"rms_norm_eps": 0.0}}"#,
            "vision_config.rms_norm_eps",
            "positive",
        ),
        (r#"{"model_type": "gemma4", "vision_config": {"hidden_size": "wide"}}"#, "vision_config", "invalid type"),
        (
            r#"{"model_type": "gemma4", "vision_config": {}, "text_config": {"hidden_size": 1.5}}"#,
            "text_config.hidden_size",
            "not an integer",
        ),
        (
            r#"{"model_type": "gemma4_unified", "vision_config": {"mm_embed_dim": 64}}"#,
            "vision_config.mm_embed_dim",
            "output_proj_dims",
        ),
        (
            r#"{"model_type": "gemma4_unified", "vision_config": {"model_patch_size": 32}}"#,
            "vision_config.model_patch_size",
            "patch_size",
        ),
    ];
    for (text, field, detail) in cases {
        let dir = model_copy("tiny-clipped", "bad-config");
        fs::write(dir.join("config.json"), text).unwrap();
        match load_err(&dir) {
            Error::Config { field: f, detail: d, path } => {
                assert_eq!(f, field, "{text}");
                assert!(d.contains(detail), "{text}: {d}");
                assert!(path.ends_with("config.json"));
            }
            other => panic!("{text}: unexpected {other}"),
        }
    }
}

#[test]
fn bad_images_are_errors_and_write_nothing() {
    let encoder = load(&fixture("tiny-clipped").join("model"));
    let dir = temp_dir("bad-images");
    let garbage = dir.join("garbage.png");
    fs::write(&garbage, b"\x89PNG\r\n\x1a\nthis is not really a png").unwrap();
    assert!(matches!(encoder.encode_files(&[&garbage], None).unwrap_err(), Error::Preprocess(_)));
    assert!(matches!(encoder.encode_files(&[dir.join("absent.jpg")], None).unwrap_err(), Error::Preprocess(_)));
    let empty: [&Path; 0] = [];
    assert!(matches!(encoder.encode_files(&empty, None).unwrap_err(), Error::Input { .. }));
}

/// A copy of the tiny-clipped model sharded in two (raw names) with `edit` applied to the
/// index's `weight_map` (tensor name → shard file) before it is written.
fn sharded_copy(name: &str, edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) -> common::TestDir {
    let dir = model_copy("tiny-clipped", name);
    let raw: Vec<(String, Array)> =
        tensor::load_safetensors(dir.join("model.safetensors")).unwrap().into_iter().collect();
    fs::remove_file(dir.join("model.safetensors")).unwrap();
    let (first, second) = raw.split_at(raw.len() / 2);
    let mut map = serde_json::Map::new();
    for (shard, tensors) in [("model-00001-of-00002.safetensors", first), ("model-00002-of-00002.safetensors", second)]
    {
        save(&dir.join(shard), tensors);
        for (tensor_name, _) in tensors {
            map.insert(tensor_name.clone(), shard.into());
        }
    }
    edit(&mut map);
    let index = serde_json::json!({ "metadata": {}, "weight_map": map });
    fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    dir
}

/// The weight files of a sharded copy.
fn shards(dir: &Path) -> [std::path::PathBuf; 2] {
    ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"].map(|s| dir.join(s))
}

#[test]
fn the_index_names_the_files_and_every_tensor_in_them_is_read() {
    let original = features(&fixture("tiny-clipped").join("model"));
    let key = "model.vision_tower.encoder.layers.1.mlp.down_proj.linear.weight";
    // As mlx-vlm's `load_model`: the index chooses the files (the shards it names that exist);
    // the tensors are whatever those files hold. A tensor the index sends to a shard that is
    // not there, one it does not list, or one it places in the wrong shard is read from the
    // shard that holds it.
    type Edit = Box<dyn FnOnce(&mut serde_json::Map<String, serde_json::Value>)>;
    let edits: [(&str, Edit); 3] = [
        ("shard-absent", Box::new(|map| drop(map.insert(key.into(), "model-00003-of-00003.safetensors".into())))),
        ("shard-unlisted", Box::new(|map| drop(map.remove(key)))),
        (
            "shard-wrong",
            Box::new(|map| {
                let [first, second] = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"];
                let other = if map[key] == first { second } else { first };
                map.insert(key.into(), other.into());
            }),
        ),
    ];
    for (name, edit) in edits {
        let dir = sharded_copy(name, edit);
        assert_eq!(features(&dir), original, "{name}");
    }
    // Files the index does not name are not read, whatever they hold.
    let dir = sharded_copy("index-ignores-others", |_| {});
    fs::write(dir.join("model.safetensors"), b"not a safetensors file").unwrap();
    fs::write(dir.join("extra.safetensors"), b"not one either").unwrap();
    assert_eq!(features(&dir), original, "stray files beside an index");
    let checkpoint = vision::Checkpoint::open(&dir).unwrap();
    assert_eq!(checkpoint.index_file(), Some(dir.join(vision::INDEX_FILE).as_path()));
    assert_eq!(checkpoint.weight_files(), shards(&dir));
}

#[test]
fn without_a_usable_index_every_safetensors_file_but_consolidated_is_read() {
    let original = features(&fixture("tiny-clipped").join("model"));
    // No index: the two shards are found by their extension. A `consolidated.safetensors`
    // (another format's single file) and hidden files are not read.
    let dir = sharded_copy("no-index", |_| {});
    fs::remove_file(dir.join(vision::INDEX_FILE)).unwrap();
    fs::write(dir.join("consolidated.safetensors"), b"not read").unwrap();
    fs::write(dir.join(".hidden.safetensors"), b"not read").unwrap();
    fs::write(dir.join("notes.txt"), b"not read").unwrap();
    assert_eq!(features(&dir), original, "no index");
    assert_eq!(vision::Checkpoint::open(&dir).unwrap().weight_files(), shards(&dir));
    // An index that is not JSON, has no weight map, or names no shard that exists: the
    // reference falls back to the directory's files, and so do we.
    for (case, text) in [
        ("index-not-json", "{ not json".to_owned()),
        ("index-no-map", r#"{"metadata": {}}"#.to_owned()),
        ("index-no-shard", r#"{"weight_map": {"a": "elsewhere.safetensors"}}"#.to_owned()),
    ] {
        let dir = sharded_copy(case, |_| {});
        fs::write(dir.join(vision::INDEX_FILE), text).unwrap();
        assert_eq!(features(&dir), original, "{case}");
        let checkpoint = vision::Checkpoint::open(&dir).unwrap();
        assert_eq!(checkpoint.index_file(), None, "{case}");
        assert_eq!(checkpoint.weight_files(), shards(&dir), "{case}");
    }
    // A weight map naming something other than a file of the directory is refused.
    let dir = sharded_copy("index-escapes", |map| drop(map.insert("x".into(), "../outside.safetensors".into())));
    let err = load_err(&dir);
    assert!(matches!(&err, Error::Checkpoint { path, .. } if path.ends_with(vision::INDEX_FILE)), "{err}");
    assert!(err.to_string().contains("`weight_map.x` is not a shard file name"), "{err}");
    // Two files holding the same tensor without an index: which one the reference reads
    // depends on the directory's listing order, so the checkpoint is refused, naming both.
    let dir = sharded_copy("duplicated", |_| {});
    fs::remove_file(dir.join(vision::INDEX_FILE)).unwrap();
    fs::copy(fixture("tiny-clipped").join("model/model.safetensors"), dir.join("model.safetensors")).unwrap();
    let err = load_err(&dir);
    let message = err.to_string();
    assert!(matches!(&err, Error::Checkpoint { .. }), "{err:?}");
    assert!(message.contains("is in both ") && message.contains("model-00001-of-00002.safetensors and "), "{message}");
    assert!(message.contains("/model.safetensors: without an index"), "{message}");
}

#[test]
fn a_missing_or_malformed_tensor_names_the_file_it_was_looked_for_in() {
    let key = "model.vision_tower.encoder.layers.1.mlp.down_proj.linear.weight";
    let sanitized = &key["model.".len()..];
    // Missing from every file: all of them are named.
    let dir = sharded_copy("tensor-missing", |_| {});
    let holder = shards(&dir).into_iter().find(|s| tensor::load_safetensors(s).unwrap().contains_key(key)).unwrap();
    let mut kept: Vec<(String, Array)> = tensor::load_safetensors(&holder).unwrap().into_iter().collect();
    kept.retain(|(n, _)| n != key);
    save(&holder, &kept);
    let err = load_err(&dir);
    match &err {
        Error::Weight { files, source: layers::Error::Missing { name } } => {
            assert_eq!(name, sanitized);
            assert_eq!(files, &shards(&dir));
        }
        other => panic!("{other:?}"),
    }
    let [a, b] = shards(&dir);
    assert_eq!(err.to_string(), format!("weight `{sanitized}` is missing (in {}, {})", a.display(), b.display()));
    // Mis-shaped or of the wrong dtype: the file that holds it.
    let dir = sharded_copy("tensor-malformed", |_| {});
    let holder = shards(&dir).into_iter().find(|s| tensor::load_safetensors(s).unwrap().contains_key(key)).unwrap();
    let mut tensors: Vec<(String, Array)> = tensor::load_safetensors(&holder).unwrap().into_iter().collect();
    let (_, w) = tensors.iter_mut().find(|(n, _)| n == key).unwrap();
    *w = w.astype(Dtype::I32).unwrap();
    save(&holder, &tensors);
    let err = load_err(&dir);
    assert!(
        matches!(&err, Error::Weight { files, source: layers::Error::Dtype { .. } } if files == std::slice::from_ref(&holder))
    );
    assert_eq!(
        err.to_string(),
        format!("weight `{sanitized}` has dtype int32, expected a float type (in {})", holder.display())
    );
}

#[test]
fn a_text_only_checkpoint_is_one_clear_error() {
    // A text-only quant writes `vision_config: null`.
    let dir = model_copy("tiny-clipped", "text-only-config");
    let path = dir.join("config.json");
    let mut json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    json["vision_config"] = serde_json::Value::Null;
    fs::write(&path, json.to_string()).unwrap();
    let err = load_err(&dir);
    assert!(matches!(&err, Error::NoVisionTower { path: p, .. } if p == &path), "{err:?}");
    assert!(err.to_string().contains("the checkpoint has no vision tower: `vision_config` is null"), "{err}");
    // Or keeps the vision config but ships no vision tensor.
    let dir = model_copy("tiny-clipped", "text-only-weights");
    rewrite_weights(&dir, |t| {
        t.retain(|(n, _)| !n.contains("vision"));
        t.push(("model.language_model.embed_tokens.weight".into(), Array::ones(&[4, 4], Dtype::Bf16).unwrap()));
    });
    let err = load_err(&dir);
    assert!(matches!(&err, Error::NoVisionTower { .. }), "{err:?}");
    assert!(err.to_string().contains("no vision tower: no tensor under vision_tower. or embed_vision. in "), "{err}");
}

#[test]
fn bad_weight_files_and_directories_have_messages_naming_them() {
    // Garbage instead of a weight file: a format error naming the file.
    let dir = model_copy("tiny-clipped", "garbage-message");
    let weights = dir.join("model.safetensors");
    fs::write(&weights, b"not a safetensors file at all").unwrap();
    let err = load_err(&dir);
    assert!(matches!(&err, Error::Tensor(tensor::Error::Format { path, .. }) if path == &weights), "{err:?}");
    assert!(err.to_string().starts_with(&format!("{}: ", weights.display())), "{err}");

    // No config, no directory, no weights.
    let empty = temp_dir("empty-message");
    assert_eq!(load_err(&empty).to_string(), format!("{}: missing", empty.join("config.json").display()));
    let nowhere = empty.join("nowhere");
    assert_eq!(load_err(&nowhere).to_string(), format!("{}: not a directory", nowhere.display()));
    let no_weights = model_copy("tiny-clipped", "no-weights-message");
    fs::remove_file(no_weights.join("model.safetensors")).unwrap();
    assert_eq!(
        load_err(&no_weights).to_string(),
        format!(
            "{}: no weights: no model.safetensors.index.json naming a shard that exists, and no *.safetensors \
             file (consolidated.safetensors is not read)",
            no_weights.display()
        )
    );
}

#[test]
fn a_bad_processor_config_is_an_error_naming_the_file() {
    let cases = [
        ("{ not json", "key must be a string"),
        (r#"{"image_processor": {"patch_size": 0}}"#, "patch_size (0) and pooling_kernel_size (3) must be positive"),
        (r#"{"image_processor": {"max_soft_tokens": 0}}"#, "a budget of 0 soft tokens: it must be at least 1"),
        (r#"{"image_processor": {"image_mean": [0.5, 0.5]}}"#, "image_mean has 2 values; expected 3"),
        (r#"{"image_processor": {"max_soft_tokens": -1}}"#, "invalid value: integer `-1`"),
    ];
    for (text, detail) in cases {
        let dir = model_copy("tiny-clipped", "bad-processor-config");
        let path = dir.join("processor_config.json");
        fs::write(&path, text).unwrap();
        let err = load_err(&dir);
        match &err {
            Error::Preprocess(preprocess::Error::Config { path: named, detail: d }) => {
                assert_eq!(named, &path, "{text}");
                assert!(d.contains(detail), "{text}: {d}");
            }
            other => panic!("{text}: expected a processor config error, got {other:?}"),
        }
        assert!(err.to_string().starts_with(&format!("{}: ", path.display())), "{err}");
    }
}
