//! [`ModelInputs`]: mlx-vlm's pixel inputs encoded as its models encode them give the bits of the
//! encoder's own paths, and inputs it cannot take are typed errors.

extern crate gemma_vision_encoder as vision;

mod common;

use common::{budget_of, bytes, fixture, image, load};
use preprocess::Patches;
use tensor::{Array, Dtype};
use vision::{Error, MlxVlmModel, ModelInputs, PreparedImage, VisionEncoder};

/// The prepared inputs of fixture images at `budget`.
fn prepared(encoder: &VisionEncoder, case: &str, names: &[&str], budget: u32) -> Vec<PreparedImage> {
    let preprocessor = encoder.preprocessor(budget_of(budget)).unwrap();
    names
        .iter()
        .map(|name| {
            let decoded = preprocess::open(image(case, name), &Default::default()).unwrap();
            encoder.prepare(&decoded, &preprocessor).unwrap()
        })
        .collect()
}

/// `[3, H, W]` float32 pixels of a prepared gemma4 image.
fn pixels(image: &PreparedImage) -> Array {
    let PreparedImage::Pixels(p) = image else { panic!("gemma4 pixels expected") };
    Array::from_slice(&p.data, &[3, p.height as i32, p.width as i32]).unwrap()
}

/// Patch rows `[len, dim]` and ids `[len, 2]` (int64).
fn rows(p: &Patches) -> (Array, Array) {
    let (len, dim) = (p.len as i32, p.dim as i32);
    (Array::from_slice(&p.data, &[len, dim]).unwrap(), Array::from_slice(&p.positions, &[len, 2]).unwrap())
}

/// `a` with a leading axis of 1.
fn one(a: &Array) -> Array {
    a.expand_dims(0).unwrap()
}

fn stack(arrays: &[Array]) -> Array {
    let expanded: Vec<Array> = arrays.iter().map(|a| a.expand_dims(0).unwrap()).collect();
    Array::concatenate(&expanded.iter().collect::<Vec<_>>(), 0).unwrap()
}

#[test]
fn gemma4_pixels_lists_and_patch_rows_give_the_encoders_own_bits() {
    let case = "tiny-clipped";
    let encoder = load(&fixture(case).join("model"));
    // One batch of same-sized images: mlx-vlm's stacked `pixel_values`.
    let same = prepared(&encoder, case, &["checker-20x30.png", "noise-20x30.png"], 6);
    let expected = encoder.encode(&same).unwrap();
    let batch = stack(&same.iter().map(pixels).collect::<Vec<_>>());
    let out = encoder.encode_model_inputs(&ModelInputs::pixels(batch).unwrap()).unwrap();
    assert_eq!(out.soft_tokens, expected.soft_tokens);
    assert_eq!(bytes(&out.features), bytes(&expected.features));

    // Images of two sizes: the list, as `[3, H, W]` and `[1, 3, H, W]` items.
    let two = prepared(&encoder, case, &["gradient-37x23.png", "checker-20x30.png"], 6);
    let expected = encoder.encode(&two).unwrap();
    let list = vec![pixels(&two[0]), pixels(&two[1]).expand_dims(0).unwrap()];
    let out = encoder.encode_model_inputs(&ModelInputs::pixel_list(list).unwrap()).unwrap();
    assert_eq!(out.soft_tokens, expected.soft_tokens);
    assert_eq!(bytes(&out.features), bytes(&expected.features));

    // The position-id path: padded patch rows, with int64 or int32 ids, as 3-D or 4-D frames.
    let preprocessor = encoder.preprocessor(budget_of(6)).unwrap();
    let decoded = preprocess::open(image(case, "noise-20x30.png"), &Default::default()).unwrap();
    let padded = preprocessor.padded_patches(&preprocessor.resize(&decoded).unwrap(), 72).unwrap();
    let expected = encoder.encode(&[PreparedImage::Patches(padded.clone())]).unwrap();
    let (patches, ids) = rows(&padded);
    let inputs = [
        ModelInputs::patches(one(&patches), Some(one(&ids))).unwrap(),
        ModelInputs::patches(one(&patches), Some(one(&ids.astype(Dtype::I32).unwrap()))).unwrap(),
        ModelInputs::patches(one(&one(&patches)), Some(one(&one(&ids)))).unwrap(),
    ];
    for input in &inputs {
        let out = encoder.encode_model_inputs(input).unwrap();
        assert_eq!(out.soft_tokens, expected.soft_tokens);
        assert_eq!(bytes(&out.features), bytes(&expected.features));
    }
    // Videos of different frame counts: each encoded, then concatenated.
    let videos = vec![(one(&patches), one(&ids)), (stack(&[patches.clone(), patches]), stack(&[ids.clone(), ids]))];
    let out = encoder.encode_model_inputs(&ModelInputs::patch_list(videos).unwrap()).unwrap();
    assert_eq!(
        out.soft_tokens,
        [expected.soft_tokens.clone(), expected.soft_tokens.clone(), expected.soft_tokens].concat()
    );
    assert_eq!(bytes(&out.features), bytes(&expected.features).repeat(3));
}

#[test]
fn unified_patches_with_ids_give_the_encoders_bits_and_without_ids_every_row() {
    let case = "tiny-unified";
    let encoder = load(&fixture(case).join("model"));
    let images = prepared(&encoder, case, &["gradient-37x23.png", "checker-20x30.png"], 20);
    let expected = encoder.encode(&images).unwrap();
    let (patches, ids): (Vec<Array>, Vec<Array>) = images
        .iter()
        .map(|image| match image {
            PreparedImage::Patches(p) => rows(p),
            PreparedImage::Pixels(_) => panic!("unified patches expected"),
        })
        .unzip();
    let out = encoder.encode_model_inputs(&ModelInputs::patches(stack(&patches), Some(stack(&ids))).unwrap()).unwrap();
    assert_eq!(out.soft_tokens, expected.soft_tokens);
    assert_eq!(bytes(&out.features), bytes(&expected.features));
    // Video frames `[V, T, N, D]` are flattened to frames, as `get_video_features` does.
    let frames = ModelInputs::patches(one(&stack(&patches)), Some(one(&stack(&ids)))).unwrap();
    assert_eq!(bytes(&encoder.encode_model_inputs(&frames).unwrap().features), bytes(&expected.features));

    // Without ids (mlx-vlm's vision cache calls `encode_image(pixel_values)`): no position
    // term, every row of every image kept.
    let n = patches[0].dim(0).unwrap();
    let out = encoder.encode_model_inputs(&ModelInputs::patches(stack(&patches), None).unwrap()).unwrap();
    assert_eq!(out.soft_tokens, [n as usize; 2]);
    assert_eq!(out.features.shape(), [2 * n, encoder.config().text_hidden_size]);
    let first = out.features.slice_axis(0, 0, expected.soft_tokens[0] as i32).unwrap();
    let with_ids = expected.features.slice_axis(0, 0, expected.soft_tokens[0] as i32).unwrap();
    assert_ne!(bytes(&first), bytes(&with_ids), "the position term is left out");
    let frames = ModelInputs::patches(one(&stack(&patches)), None).unwrap();
    assert_eq!(bytes(&encoder.encode_model_inputs(&frames).unwrap().features), bytes(&out.features));
}

fn input_error(result: vision::Result<impl std::fmt::Debug>, input: &str) -> String {
    match result {
        Err(Error::ModelInput { input: got, expected, found }) if got == input => format!("{expected} / {found}"),
        other => panic!("expected a model input error on {input}, got {other:?}"),
    }
}

#[test]
fn inputs_of_another_shape_dtype_or_family_are_typed_errors() {
    let zeros = |shape: &[i32], dtype| Array::zeros(shape, dtype).unwrap();
    // Shapes and dtypes, checked by the constructors.
    assert!(input_error(ModelInputs::pixels(zeros(&[1, 3, 24, 24], Dtype::Bf16)), "pixel_values").contains("float32"));
    assert!(input_error(ModelInputs::pixels(zeros(&[3, 24, 24], Dtype::F32)), "pixel_values").contains("[B, 3, H, W]"));
    assert!(input_error(ModelInputs::pixels(zeros(&[1, 4, 24, 24], Dtype::F32)), "pixel_values").contains("[1, 4"));
    input_error(ModelInputs::pixel_list(vec![]), "pixel_values");
    input_error(ModelInputs::pixel_list(vec![zeros(&[24, 24], Dtype::F32)]), "pixel_values[i]");
    let patches = zeros(&[1, 72, 48], Dtype::F32);
    let found =
        input_error(ModelInputs::patches(patches.clone(), Some(zeros(&[1, 71, 2], Dtype::I64))), "position ids");
    assert!(found.contains("[1, 72, 2]") && found.contains("[1, 71, 2]"), "{found}");
    input_error(ModelInputs::patches(patches.clone(), Some(zeros(&[1, 72, 2], Dtype::F32))), "position ids");
    input_error(ModelInputs::patches(zeros(&[72, 48], Dtype::F32), None), "patches");
    input_error(ModelInputs::patch_list(vec![]), "pixel_values_videos");

    // What each family takes, checked when encoding.
    let gemma4 = load(&fixture("tiny-clipped").join("model"));
    input_error(gemma4.encode_model_inputs(&ModelInputs::patches(patches.clone(), None).unwrap()), "position ids");
    let wide = ModelInputs::patches(zeros(&[1, 72, 768], Dtype::F32), Some(zeros(&[1, 72, 2], Dtype::I64))).unwrap();
    let found = input_error(gemma4.encode_model_inputs(&wide), "patches and position ids");
    assert!(found.contains("48") && found.contains("768"), "{found}");
    let unified = load(&fixture("tiny-unified").join("model"));
    let pixels = ModelInputs::pixels(zeros(&[1, 3, 24, 24], Dtype::F32)).unwrap();
    input_error(unified.encode_model_inputs(&pixels), "pixel_values");
    let wide = ModelInputs::patches(zeros(&[1, 72, 768], Dtype::F32), None).unwrap();
    let found = input_error(unified.encode_model_inputs(&wide), "patches");
    assert!(found.contains("48") && found.contains("768"), "{found}");
    assert!(unified.encode_model_inputs(&ModelInputs::patches(patches, None).unwrap()).is_ok());
}
