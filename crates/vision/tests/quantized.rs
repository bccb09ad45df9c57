//! Quantized checkpoints as mlx-vlm 0.7.10 loads them: which modules are quantized and how,
//! every case the reference refuses as a named error, and the `Inspection` of such a
//! checkpoint. (Bit-exactness of every mode against the reference: `crates/parity/tests/
//! vision_fixtures.rs` on the fixtures `q-*`.)

extern crate gemma_vision_encoder as vision;

mod common;

use common::{budget_of, bytes, fixture, image, load, model_copy, rewrite_weights};
use std::fs;
use std::path::Path;
use tensor::{Array, Dtype};
use vision::{BudgetSource, CacheIdentity, ComputeDtype, EncoderOptions, Error, Inspection, VisionEncoder};

fn edit_config(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("config.json");
    let mut json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut json);
    fs::write(&path, json.to_string()).unwrap();
}

fn quantization_error(dir: &Path) -> (String, String) {
    match VisionEncoder::load(dir, EncoderOptions::default()) {
        Err(Error::Quantization { module, detail }) => (module, detail),
        other => panic!("expected a quantization error, got {other:?}"),
    }
}

fn features(dir: &Path) -> Vec<u8> {
    let images = [image("q-mxfp4", "gradient-37x23.png"), image("q-mxfp4", "checker-20x30.png")];
    bytes(&load(dir).encode_files(&images, budget_of(6)).unwrap().features)
}

const PROJECTOR: &str = "embed_vision.embedding_projection";

#[test]
fn the_plan_follows_the_stored_scales_and_the_config() {
    // q-mxfp4: mxfp4 projector and tower linears (one layer), raw names, the section under both keys.
    let encoder = load(&fixture("q-mxfp4").join("model"));
    let plan = encoder.checkpoint().quantization();
    assert_eq!(plan.modules().len(), 8);
    for (module, q) in plan.modules() {
        assert!(module == PROJECTOR || module.starts_with("vision_tower.encoder.layers.0."), "{module}");
        assert_eq!((q.mode().as_str(), q.bits(), q.group_size()), ("mxfp4", 4, 32), "{module}");
    }
    // The same checkpoint with only `quantization_config` reads the same.
    let original = features(&fixture("q-mxfp4").join("model"));
    let dir = model_copy("q-mxfp4", "only-quantization-config");
    edit_config(&dir, |j| drop(j.as_object_mut().unwrap().remove("quantization")));
    assert_eq!(features(&dir), original);
    // A per-module entry for a module stored dense does not matter with `skip_vision`.
    let dir = model_copy("q-mxfp4", "skip-vision");
    edit_config(&dir, |j| {
        j["quantization"]["vision_tower.patch_embedder.input_proj"] = serde_json::json!({"bits": 8});
        j["vision_config"]["skip_vision"] = true.into();
    });
    assert_eq!(features(&dir), original);
}

#[test]
fn what_the_reference_refuses_is_an_error_naming_the_module() {
    type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;
    let cases: Vec<(&str, Edit, &str, &str)> = vec![
        (
            "no-section",
            Box::new(|j| {
                let config = j.as_object_mut().unwrap();
                config.remove("quantization");
                config.remove("quantization_config");
            }),
            PROJECTOR,
            "config.json has no `quantization` section",
        ),
        ("set-false", Box::new(|j| j["quantization"][PROJECTOR] = false.into()), PROJECTOR, "sets it to false"),
        (
            "entry-for-dense",
            Box::new(|j| j["quantization"]["vision_tower.patch_embedder.input_proj"] = serde_json::json!({"bits": 8})),
            "vision_tower.patch_embedder.input_proj",
            "stores it dense",
        ),
        (
            "unknown-mode",
            Box::new(|j| j["quantization"]["mode"] = "int4".into()),
            "embed_vision.embedding_projection",
            "`int4` is not a quantization mode",
        ),
        (
            "unsupported-bits",
            Box::new(|j| j["quantization"][PROJECTOR] = serde_json::json!({"group_size": 32, "bits": 7})),
            PROJECTOR,
            "affine with group size 32 and 7 bits: MLX supports group size 32, 64 or 128 and bits 1, 2, 3, 4, 5, 6 or 8",
        ),
    ];
    for (name, edit, module, detail) in cases {
        let dir = model_copy("q-mxfp4", name);
        edit_config(&dir, edit);
        let (m, d) = quantization_error(&dir);
        assert_eq!(m, module, "{name}");
        assert!(d.contains(detail), "{name}: {d}");
    }
    // A per-module entry with parameters that do not fit the stored tensors: a shape error
    // naming the tensor and its file (the entry's own values are used, not the defaults').
    let dir = model_copy("q-mxfp4", "entry-mismatch");
    edit_config(&dir, |j| j["quantization"][PROJECTOR] = serde_json::json!({"group_size": 64, "bits": 8}));
    match VisionEncoder::load(&*dir, EncoderOptions::default()) {
        Err(Error::Weight { files, source: layers::Error::Shape { name, expected, actual } }) => {
            assert_eq!(name, format!("{PROJECTOR}.weight"));
            assert_eq!((expected, actual), (vec![64, 16], vec![64, 8]), "8 bits pack 4 values per word, 4 bits 8");
            assert_eq!(files, [dir.join("model.safetensors")]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_quantized_patch_embedder_or_an_odd_sized_linear_cannot_load_in_the_reference() {
    // The patch embedder casts the pixels to its weight's dtype: quantized, the reference fails.
    // (Its 48 inputs are padded to 64 to quantize in groups of 32.)
    let dir = model_copy("q-mxfp4", "quantized-patch-embedder");
    rewrite_weights(&dir, |t| {
        let key = "model.vision_tower.patch_embedder.input_proj.weight";
        let w = Array::ones(&[64, 64], Dtype::Bf16).unwrap();
        let (packed, scales, _) = w.quantize(Some(32), Some(4), "mxfp4").unwrap();
        t.retain(|(n, _)| n != key);
        t.push((key.into(), packed));
        t.push(("model.vision_tower.patch_embedder.input_proj.scales".into(), scales));
    });
    let (module, detail) = quantization_error(&dir);
    assert_eq!(module, "vision_tower.patch_embedder.input_proj");
    assert!(detail.contains("casts the pixels"), "{detail}");

    // Without a per-module entry the reference quantizes only weights of a multiple of 64
    // elements: a 47 × 32 projector stored quantized cannot load there.
    let dir = model_copy("tiny-clipped", "odd-projector");
    edit_config(&dir, |j| {
        j["text_config"]["hidden_size"] = 47.into();
        j["quantization"] = serde_json::json!({"group_size": 32, "bits": 4, "mode": "mxfp4"});
    });
    rewrite_weights(&dir, |t| {
        let w = Array::ones(&[47, 32], Dtype::Bf16).unwrap();
        let (packed, scales, _) = w.quantize(Some(32), Some(4), "mxfp4").unwrap();
        t.retain(|(n, _)| !n.starts_with("model.embed_vision."));
        t.push((format!("model.{PROJECTOR}.weight"), packed));
        t.push((format!("model.{PROJECTOR}.scales"), scales));
    });
    let (module, detail) = quantization_error(&dir);
    assert_eq!(module, PROJECTOR);
    assert!(detail.contains("1504 weights (not a multiple of 64)"), "{detail}");
    // With a per-module entry the reference quantizes it regardless, and so do we.
    edit_config(&dir, |j| j["quantization"][PROJECTOR] = serde_json::json!({"group_size": 32, "mode": "mxfp4"}));
    let encoder = load(&dir);
    let out = encoder.encode_files(&[image("tiny-clipped", "noise-20x30.png")], budget_of(6)).unwrap();
    assert_eq!(out.features.shape(), [6, 47]);
}

/// `module` of q-mxfp4 (mxfp4, 64 × 64) re-stored as 1-bit affine in groups of `group`.
fn restore_as_one_bit(tensors: &mut Vec<(String, Array)>, module: &str, group: i32) {
    let (weight, scales) = (format!("model.{module}.weight"), format!("model.{module}.scales"));
    let find = |name: &str| tensors.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let dense = find(&weight).dequantize(&find(&scales), None, Some(32), Some(4), "mxfp4").unwrap();
    let (packed, scales_1, biases) =
        dense.astype(Dtype::Bf16).unwrap().quantize(Some(group), Some(1), "affine").unwrap();
    tensors.retain(|(n, _)| n != &weight && n != &scales);
    tensors.push((weight, packed));
    tensors.push((scales, scales_1));
    tensors.push((format!("model.{module}.biases"), biases.unwrap()));
}

/// mlx-vlm loads a 1-bit affine module as its own `OneBitLinear` (a dequantized weight and a
/// matmul) by the section's parameters updated by the module's entry; so do we, a projector and
/// a clipped tower linear, on the host and on MLX with the same bits. What makes the reference
/// fail is an error naming the module.
#[test]
fn one_bit_modules_load_as_mlx_vlm_loads_them() {
    const Q_PROJ: &str = "vision_tower.encoder.layers.0.self_attn.q_proj.linear";
    let dir = model_copy("q-mxfp4", "one-bit");
    rewrite_weights(&dir, |t| {
        restore_as_one_bit(t, PROJECTOR, 32);
        restore_as_one_bit(t, Q_PROJ, 64);
    });
    // The entry's mode is merged with the section's (mxfp4): a 1-bit mxfp4 module fails there.
    edit_config(&dir, |j| {
        j["quantization"][PROJECTOR] = serde_json::json!({"bits": 1, "mode": "affine"});
        j["quantization"][Q_PROJ] = serde_json::json!({"bits": 1, "group_size": 64});
    });
    let (module, detail) = quantization_error(&dir);
    assert_eq!(module, Q_PROJ);
    assert!(detail.contains("must use affine mode, got `mxfp4`"), "{detail}");
    edit_config(&dir, |j| j["quantization"][Q_PROJ]["mode"] = "affine".into());
    let images = [image("q-mxfp4", "gradient-37x23.png"), image("q-mxfp4", "checker-20x30.png")];
    let encode = |kernels| {
        let encoder = VisionEncoder::load(&*dir, EncoderOptions { kernels, ..Default::default() }).unwrap();
        let plan = encoder.checkpoint().quantization();
        for (module, group) in [(PROJECTOR, 32), (Q_PROJ, 64)] {
            let q = plan.get(module).unwrap();
            assert_eq!((q.mode().as_str(), q.bits(), q.group_size()), ("affine", 1, group), "{module}");
        }
        let _ = layers::take_kernels_run();
        let features = bytes(&encoder.encode_files(&images, budget_of(6)).unwrap().features);
        (features, layers::take_kernels_run())
    };
    let (host, ran) = encode(vision::Kernels::Auto);
    let (mlx, _) = encode(vision::Kernels::Mlx);
    assert_eq!(host, mlx, "the host kernels and MLX's ops give the same bits");
    assert!(ran.contains(&layers::HostKernel::Gemm) && ran.contains(&layers::HostKernel::QuantizedMatmul), "{ran:?}");
    // A group size OneBitLinear refuses, and an entry without `bits` under a 1-bit section.
    edit_config(&dir, |j| j["quantization"][PROJECTOR]["group_size"] = 16.into());
    let (module, detail) = quantization_error(&dir);
    assert_eq!(module, PROJECTOR);
    assert!(detail.contains("group size 16 and 1 bits"), "{detail}");
    edit_config(&dir, |j| {
        j["quantization"]["bits"] = 1.into();
        j["quantization"]["mode"] = "affine".into();
        j["quantization"][PROJECTOR] = serde_json::json!({"group_size": 32});
    });
    let (module, detail) = quantization_error(&dir);
    assert_eq!(module, PROJECTOR);
    assert!(detail.contains("names no `bits`"), "{detail}");
}

#[test]
fn the_inspection_of_a_quantized_checkpoint() {
    let dir = fixture("q-legacy-affine4").join("model");
    let encoder = load(&dir);
    let inspection = Inspection::of(&encoder, None, Some((640, 480))).unwrap();
    assert_eq!(inspection.feature_dtype, "bfloat16");
    assert_eq!(inspection.compute_dtype, ComputeDtype::Native);
    assert_eq!(inspection.feature_width, 64);
    assert_eq!(inspection.index_file.as_deref(), Some(dir.join(vision::INDEX_FILE).as_path()));
    assert_eq!(inspection.quantized_modules.len(), 1);
    assert_eq!(inspection.quantized_modules[0].module, PROJECTOR);
    // Read: what the encoder loaded, at its stored size; ignored: everything else, by group.
    let mut stored = std::collections::BTreeMap::new();
    for file in &inspection.weight_files {
        stored.extend(tensor::load_safetensors(file).unwrap());
    }
    let vision: Vec<&String> = stored
        .keys()
        .filter(|k| k.starts_with("model.vision_tower.") || k.starts_with("model.embed_vision."))
        .collect();
    assert_eq!(inspection.tensors.read, vision.len());
    let bytes: usize = vision.iter().map(|k| stored[*k].nbytes()).sum();
    assert_eq!(inspection.tensors.bytes_read, bytes as u64);
    let language = stored.keys().filter(|k| k.starts_with("model.language_model.")).count();
    assert!(language > 0);
    assert_eq!(inspection.tensors.ignored.language_model, language);
    assert_eq!(
        inspection.tensors.ignored.audio + inspection.tensors.ignored.other,
        stored.len() - vision.len() - language
    );
    assert_eq!(inspection.cache_identity, encoder.cache_identity().unwrap());
    // A budget of 6 from processor_config.json: 640×480 → 24×24 (patches of 4, pool 3) → 4 soft tokens.
    assert_eq!(inspection.budget.source, BudgetSource::ProcessorConfig);
    let image = inspection.image.unwrap();
    assert_eq!((image.resized, image.soft_tokens), ([24, 24], 4));
    // Under --dtype f32 the features are float32; packed tensors count the same bytes.
    let f32 =
        VisionEncoder::load(&*dir, EncoderOptions { compute_dtype: ComputeDtype::F32, ..Default::default() }).unwrap();
    let inspection32 = Inspection::of(&f32, None, None).unwrap();
    assert_eq!((inspection32.feature_dtype.as_str(), inspection32.compute_dtype.as_str()), ("float32", "f32"));
    assert_eq!(inspection32.tensors.bytes_read, inspection.tensors.bytes_read);
    assert_ne!(inspection32.cache_identity, inspection.cache_identity);
}

#[test]
fn the_budget_source_is_the_flag_then_the_files_then_the_default() {
    let dir = model_copy("tiny-unified", "budget-source");
    let source = |budget| Inspection::of(&load(&dir), budget, None).unwrap().budget;
    assert_eq!(source(budget_of(9)).source, BudgetSource::Flag);
    assert_eq!(source(budget_of(9)).max_soft_tokens, 9);
    assert_eq!(source(None).source, BudgetSource::ProcessorConfig);
    let processor = fs::read_to_string(dir.join("processor_config.json")).unwrap();
    fs::rename(dir.join("processor_config.json"), dir.join("preprocessor_config.json")).unwrap();
    assert_eq!(source(None).source, BudgetSource::PreprocessorConfig);
    // A file that sets no budget: the default; gemma4_unified also reads `num_soft_tokens`.
    let mut json: serde_json::Value = serde_json::from_str(&processor).unwrap();
    let budget = json["image_processor"].as_object_mut().unwrap().remove("max_soft_tokens").unwrap();
    fs::write(dir.join("preprocessor_config.json"), json.to_string()).unwrap();
    assert_eq!((source(None).source, source(None).max_soft_tokens), (BudgetSource::Default, 280));
    json["image_processor"]["num_soft_tokens"] = budget.clone();
    fs::write(dir.join("preprocessor_config.json"), json.to_string()).unwrap();
    assert_eq!(
        (source(None).source, source(None).max_soft_tokens as u64),
        (BudgetSource::PreprocessorConfig, budget.as_u64().unwrap())
    );
    fs::remove_file(dir.join("preprocessor_config.json")).unwrap();
    assert_eq!((source(None).source, source(None).max_soft_tokens), (BudgetSource::Default, 280));
}
