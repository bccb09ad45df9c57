//! Videos on both families: the frames the video processor keeps, each through the family's
//! video path, the same bits as the model inputs mlx-vlm's processor makes of them (the
//! reference's own bits are the parity suite's video rows).

extern crate gemma_vision_encoder as vision;

mod common;

use common::{budget_of, bytes, encode_video, fixture, image, load};
use tensor::Array;
use vision::{BudgetError, Error, MlxVlmModel, ModelInputs, PreparedImage};

fn frames(case: &str) -> Vec<preprocess::RgbImage> {
    ["gradient-37x23.png", "checker-37x23.png", "noise-37x23.png"]
        .iter()
        .map(|name| preprocess::open(image(case, name), &Default::default()).unwrap())
        .collect()
}

#[test]
fn a_video_is_its_kept_frames_through_the_video_path() {
    for case in ["tiny-clipped", "tiny-unified"] {
        let encoder = load(&fixture(case).join("model"));
        let frames = frames(case);
        let video = encoder.video_preprocessor(None).unwrap();
        assert_eq!((video.config().num_frames, video.config().frame.max_soft_tokens.get()), (2, 70), "{case}");
        let out = encode_video(&encoder, &frames, None).unwrap();
        // The fixture's video processor keeps 2 of 3 frames: the first and the last.
        assert_eq!(out.soft_tokens.len(), 2, "{case}");
        let alone: Vec<_> = [&frames[0], &frames[2]]
            .into_iter()
            .map(|frame| {
                let prepared = encoder.prepare_video(std::slice::from_ref(frame), &video).unwrap();
                encoder.encode(&prepared).unwrap()
            })
            .collect();
        assert_eq!(out.soft_tokens, alone.iter().map(|f| f.soft_tokens[0]).collect::<Vec<_>>(), "{case}");
        let concatenated: Vec<u8> = alone.iter().flat_map(|f| bytes(&f.features)).collect();
        assert_eq!(bytes(&out.features), concatenated, "{case}: frames batched equal frames alone");

        // The processor's output as mlx-vlm hands it to the model: `[1, T, L, D]` with ids.
        let prepared = encoder.prepare_video(&frames, &video).unwrap();
        let (patches, ids): (Vec<Array>, Vec<Array>) = prepared
            .iter()
            .map(|frame| {
                let PreparedImage::Patches(p) = frame else { panic!("patches expected") };
                let (len, dim) = (p.len as i32, p.dim as i32);
                (
                    Array::from_slice(&p.data, &[1, 1, len, dim]).unwrap(),
                    Array::from_slice(&p.positions, &[1, 1, len, 2]).unwrap(),
                )
            })
            .unzip();
        let cat = |a: &[Array]| Array::concatenate(&a.iter().collect::<Vec<_>>(), 1).unwrap();
        let inputs = ModelInputs::patches(cat(&patches), Some(cat(&ids))).unwrap();
        let via_inputs = encoder.encode_model_inputs(&inputs).unwrap();
        assert_eq!(via_inputs.soft_tokens, out.soft_tokens, "{case}");
        assert_eq!(bytes(&via_inputs.features), bytes(&out.features), "{case}");
    }
}

#[test]
fn the_budget_per_frame_is_one_of_the_video_processors() {
    let encoder = load(&fixture("tiny-unified").join("model"));
    let frames = frames("tiny-unified");
    let at_70 = encode_video(&encoder, &frames, None).unwrap();
    let at_140 = encode_video(&encoder, &frames, budget_of(140)).unwrap();
    assert!(at_140.soft_tokens.iter().zip(&at_70.soft_tokens).all(|(a, b)| a > b), "{at_140:?} vs {at_70:?}");
    let err = encode_video(&encoder, &frames, budget_of(100)).unwrap_err();
    assert!(
        matches!(&err, Error::Preprocess(preprocess::Error::Budget(BudgetError::NotAVideoBudget { budget: 100, .. }))),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "a video's budget of 100 soft tokens per frame: it must be one of [70, 140, 280, 560, 1120]"
    );
}

#[test]
fn frames_of_two_sizes_or_none_are_refused() {
    let encoder = load(&fixture("tiny-clipped").join("model"));
    let mut frames = frames("tiny-clipped");
    frames.push(preprocess::open(image("tiny-clipped", "checker-20x30.png"), &Default::default()).unwrap());
    let err = encode_video(&encoder, &frames, None).unwrap_err();
    assert!(err.to_string().contains("frame 3 is 20x30"), "{err}");
    assert!(encode_video(&encoder, &[], None).is_err());
}
