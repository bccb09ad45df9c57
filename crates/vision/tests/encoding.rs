//! The encoders' own consistency: batching, paths, options, identity, sharing.

extern crate gemma_vision_encoder as vision;

mod common;

use common::{budget_of, bytes, fixture, image, load};
use std::sync::Arc;
use tensor::Dtype;
use vision::{CacheIdentity, ComputeDtype, EncoderOptions, Kernels, PreparedImage, VisionEncoder};

#[test]
fn several_images_in_one_call_equal_one_at_a_time() {
    for case in ["tiny-clipped", "tiny-unified"] {
        let encoder = load(&fixture(case).join("model"));
        let paths =
            [image(case, "gradient-37x23.png"), image(case, "checker-20x30.png"), image(case, "gradient-37x23.png")];
        let together = encoder.encode_files(&paths, budget_of(6)).unwrap();
        let mut separate = Vec::new();
        for path in &paths {
            let one = encoder.encode_files(std::slice::from_ref(path), budget_of(6)).unwrap();
            assert_eq!(one.soft_tokens.len(), 1);
            separate.push(one);
        }
        assert_eq!(together.soft_tokens, separate.iter().map(|f| f.soft_tokens[0]).collect::<Vec<_>>(), "{case}");
        let concatenated: Vec<u8> = separate.iter().flat_map(|f| bytes(&f.features)).collect();
        assert_eq!(bytes(&together.features), concatenated, "{case}: batched features equal single ones");
        let rows = together.features.dim(0).unwrap() as usize;
        assert_eq!(rows, together.soft_tokens.iter().sum::<usize>());
    }
}

#[test]
fn image_path_equals_padded_path() {
    let encoder = load(&fixture("tiny-clipped").join("model"));
    let preprocessor = encoder.preprocessor(budget_of(6)).unwrap();
    let decoded = preprocess::open(image("tiny-clipped", "noise-20x30.png"), &Default::default()).unwrap();
    let pixels = encoder.prepare(&decoded, &preprocessor).unwrap();
    let resized = preprocessor.resize(&decoded).unwrap();
    let via_pixels = encoder.encode(&[pixels]).unwrap();
    for len in [54, 72, 90] {
        let patches = PreparedImage::Patches(preprocessor.padded_patches(&resized, len).unwrap());
        let via_patches = encoder.encode(&[patches]).unwrap();
        assert_eq!(via_patches.soft_tokens, via_pixels.soft_tokens, "padded to {len}");
        assert_eq!(bytes(&via_patches.features), bytes(&via_pixels.features), "padded to {len}");
    }
}

#[test]
fn features_have_the_documented_shape_and_dtype() {
    let gemma4 = load(&fixture("tiny-clipped").join("model"));
    let out = gemma4.encode_files(&[image("tiny-clipped", "checker-20x30.png")], budget_of(6)).unwrap();
    assert_eq!(out.features.dtype(), Dtype::Bf16, "a bf16 gemma4 checkpoint gives bf16 features");
    assert_eq!(out.features.shape(), [out.soft_tokens[0] as i32, 48]);
    let unified = load(&fixture("tiny-unified").join("model"));
    let out = unified.encode_files(&[image("tiny-unified", "checker-20x30.png")], budget_of(20)).unwrap();
    assert_eq!(out.features.dtype(), Dtype::F32, "gemma4_unified promotes to float32");
    assert_eq!(out.features.shape(), [out.soft_tokens[0] as i32, 24]);
}

#[test]
fn float32_compute_stays_close_to_native() {
    let dir = fixture("tiny-clipped").join("model");
    let native = load(&dir);
    let f32_options = EncoderOptions { compute_dtype: ComputeDtype::F32, ..EncoderOptions::default() };
    let fast = VisionEncoder::load(&dir, f32_options).unwrap();
    let paths = [image("tiny-clipped", "noise-20x30.png")];
    let a = native
        .encode_files(&paths, budget_of(6))
        .unwrap()
        .features
        .astype(Dtype::F32)
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let b = fast.encode_files(&paths, budget_of(6)).unwrap();
    assert_eq!(b.features.dtype(), Dtype::F32);
    let b = b.features.to_vec::<f32>().unwrap();
    let err: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum::<f32>().sqrt();
    let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!(err / norm < 0.05, "relative RMSE {}", err / norm);
}

/// The host kernels (the default on the CPU) and MLX's ops give the same bits on every
/// checked-in tiny checkpoint (quantized ones included), in both compute dtypes, on the image
/// path and the padded path, for one image and for a batch of two; and the host kernels did run.
#[test]
fn the_host_kernels_and_mlx_ops_give_identical_bits_on_every_fixture() {
    let mut cases: Vec<String> = std::fs::read_dir(fixture(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| fixture(name).join("model").is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 3, "fixtures: {cases:?}");
    for case in &cases {
        let case = case.as_str();
        let dir = fixture(case).join("model");
        let images: Vec<_> = std::fs::read_dir(fixture(case).join("images"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "png"))
            .collect();
        for compute_dtype in [ComputeDtype::Native, ComputeDtype::F32] {
            let options = |kernels| EncoderOptions { compute_dtype, kernels, ..EncoderOptions::default() };
            let host = VisionEncoder::load(&dir, options(Kernels::Auto)).unwrap();
            let mlx = VisionEncoder::load(&dir, options(Kernels::Mlx)).unwrap();
            assert_eq!(
                host.cache_identity().unwrap(),
                mlx.cache_identity().unwrap(),
                "{case}: same bits, same identity"
            );
            let preprocessor = host.preprocessor(budget_of(6)).unwrap();
            let decoded: Vec<_> = images.iter().map(|p| preprocess::open(p, &Default::default()).unwrap()).collect();
            let mut inputs: Vec<Vec<PreparedImage>> = vec![
                decoded.iter().take(1).map(|d| host.prepare(d, &preprocessor).unwrap()).collect(),
                decoded.iter().take(2).map(|d| host.prepare(d, &preprocessor).unwrap()).collect(),
            ];
            if host.config().model_type == vision::ModelType::Gemma4 {
                let resized = preprocessor.resize(&decoded[0]).unwrap();
                inputs.push(vec![PreparedImage::Patches(preprocessor.padded_patches(&resized, 72).unwrap())]);
            }
            for input in &inputs {
                let _ = layers::take_kernels_run();
                let got = host.encode(input).unwrap();
                let ran = layers::take_kernels_run();
                let expected = mlx.encode(input).unwrap();
                let what = format!("{case}, {compute_dtype:?}, {} image(s)", input.len());
                assert_eq!(got.soft_tokens, expected.soft_tokens, "{what}");
                assert_eq!(got.features.dtype(), expected.features.dtype(), "{what}");
                assert!(bytes(&got.features) == bytes(&expected.features), "{what}: the host kernels' bits differ");
                // Every encoder ends in embed_vision's RMS norm and projection, quantized in the
                // q-* cases.
                use layers::HostKernel::{Gemm, QuantizedMatmul, RmsNorm};
                let expected_kernels =
                    if case.starts_with("q-") { [QuantizedMatmul, RmsNorm] } else { [Gemm, RmsNorm] };
                assert!(expected_kernels.iter().all(|k| ran.contains(k)), "{what}: host kernels ran: {ran:?}");
            }
        }
    }
}

#[test]
fn dividing_by_embed_scale_is_an_explicit_option() {
    let dir = fixture("tiny-clipped").join("model");
    let paths = [image("tiny-clipped", "checker-20x30.png")];
    let plain = load(&dir).encode_files(&paths, budget_of(6)).unwrap().features;
    let options = EncoderOptions { divide_by_embed_scale: true, ..EncoderOptions::default() };
    let divided = VisionEncoder::load(&dir, options).unwrap().encode_files(&paths, budget_of(6)).unwrap().features;
    let expected = plain.div(48f64.sqrt()).unwrap();
    assert_eq!(bytes(&divided), bytes(&expected));
    assert_ne!(bytes(&divided), bytes(&plain));
}

#[test]
fn cache_identity_tracks_weights_config_and_options() {
    let dir = fixture("tiny-clipped").join("model");
    let a = load(&dir).cache_identity().unwrap();
    assert_eq!(a.len(), 64);
    assert_eq!(load(&dir).cache_identity().unwrap(), a, "stable across loads");
    let f32_options = EncoderOptions { compute_dtype: ComputeDtype::F32, ..EncoderOptions::default() };
    assert_ne!(VisionEncoder::load(&dir, f32_options).unwrap().cache_identity().unwrap(), a);
    assert_ne!(load(&fixture("tiny-f32").join("model")).cache_identity().unwrap(), a);
    let changed = common::model_copy("tiny-clipped", "identity");
    common::rewrite_weights(&changed, |tensors| {
        let (_, w) = tensors.iter_mut().find(|(n, _)| n.ends_with("embedding_projection.weight")).unwrap();
        *w = w.mul(2.0).unwrap();
    });
    assert_ne!(load(&changed).cache_identity().unwrap(), a, "one changed tensor changes the identity");
}

/// The identity of a checked-in fixture, pinned: an accidental change of what the identity
/// covers (a part renamed, a type's spelling leaking in) fails here. Change the value only with
/// the identity's format (`format gemma-vision/N`), which invalidates every feature cache.
#[test]
fn the_identity_of_a_fixture_is_pinned() {
    let encoder = load(&fixture("tiny-clipped").join("model"));
    let parts = encoder.identity_parts().unwrap();
    let names: Vec<&str> = parts.iter().map(|p| p.split_once(' ').unwrap().0).collect();
    assert_eq!(names, ["format", "config", "processor", "compute_dtype", "divide_by_embed_scale", "mlx", "weights"]);
    assert_eq!(parts[0], "format gemma-vision/3");
    assert_eq!(parts[3], "compute_dtype native");
    assert_eq!(parts[5], format!("mlx {}", tensor::info::mlx_build_version()));
    if tensor::info::mlx_build_version() == "0.32.4" {
        assert_eq!(
            encoder.cache_identity().unwrap(),
            "e4caafa32d7ad0e6c2ecfad4b42568c986a24fb8a8f2c506a48f7713c3f4ff35"
        );
    }
}

#[test]
fn one_encoder_serves_many_threads_with_identical_results() {
    fn assert_sync<T: Send + Sync>() {}
    assert_sync::<VisionEncoder>();
    let encoder = Arc::new(load(&fixture("tiny-clipped").join("model")));
    let paths = vec![image("tiny-clipped", "noise-20x30.png"), image("tiny-clipped", "gradient-37x23.png")];
    let expected = bytes(&encoder.encode_files(&paths, budget_of(6)).unwrap().features);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (encoder, paths) = (Arc::clone(&encoder), paths.clone());
            std::thread::spawn(move || {
                (0..5).map(|_| bytes(&encoder.encode_files(&paths, budget_of(6)).unwrap().features)).collect::<Vec<_>>()
            })
        })
        .collect();
    for handle in handles {
        for result in handle.join().unwrap() {
            assert_eq!(result, expected);
        }
    }
}

#[test]
fn out_of_table_positions_are_rejected_not_read() {
    let encoder = load(&fixture("tiny-unified").join("model"));
    let preprocessor = encoder.preprocessor(budget_of(20)).unwrap();
    let decoded = preprocess::open(image("tiny-unified", "checker-20x30.png"), &Default::default()).unwrap();
    let PreparedImage::Patches(mut patches) = encoder.prepare(&decoded, &preprocessor).unwrap() else {
        panic!("gemma4_unified takes patches");
    };
    patches.positions[0] = 32; // the fixture's mm_posemb_size
    let err = encoder.encode(&[PreparedImage::Patches(patches)]).unwrap_err();
    assert!(matches!(&err, vision::Error::Input { what } if what.contains("position id 32")), "{err}");
}
