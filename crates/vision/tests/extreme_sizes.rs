//! Degenerate but valid images (1×1, extreme aspect ratios) encode as the reference sizes them
//! (`tests/fixtures/extreme_sizes.json`, written by `extreme_sizes.py` from mlx-vlm's own
//! `get_aspect_ratio_preserving_size`); absurd budgets and hand-built encoder inputs with
//! extreme sizes or positions are typed errors, refused before anything is allocated, never
//! overflows.
//!
//! The tests of this file run one at a time (`serial`) so that the peak resident set measured
//! around an absurd budget is this test's alone.

extern crate gemma_vision_encoder as vision;

mod common;

use common::{
    assert_finite, budget_of, current_rss_kb, encode_images, encode_video, fixture, load, peak_rss_kb, reset_peak_rss,
    serial,
};
use preprocess::RgbImage;
use std::fs;
use std::path::Path;
use vision::{BudgetError, Error, SoftTokenBudget, VisionEncoder};

fn tiny(case: &str) -> VisionEncoder {
    load(&fixture(case).join("model"))
}

/// `extreme_sizes.json` of one fixture: the budget, the reference's sizing of each image, and
/// the reference's error for a zero budget.
struct ReferenceSizes {
    budget: u32,
    images: Vec<ReferenceSize>,
    zero_budget_error: Option<String>,
}

/// An image of `width × height` resized by the reference to `resized` (height, width), giving
/// `soft_tokens`.
struct ReferenceSize {
    width: u32,
    height: u32,
    resized: (u32, u32),
    soft_tokens: usize,
}

fn reference_sizes(case: &str) -> ReferenceSizes {
    let text = fs::read_to_string(fixture("extreme_sizes.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let case = &json[case];
    let n = |v: &serde_json::Value| v.as_u64().unwrap() as u32;
    let images = case["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| ReferenceSize {
            width: n(&i["width"]),
            height: n(&i["height"]),
            resized: (n(&i["resized"][0]), n(&i["resized"][1])),
            soft_tokens: n(&i["soft_tokens"]) as usize,
        })
        .collect();
    ReferenceSizes {
        budget: n(&case["budget"]),
        images,
        zero_budget_error: case["zero_budget_error"].as_str().map(str::to_owned),
    }
}

/// A deterministic `width × height` RGB image.
fn pattern(width: u32, height: u32) -> RgbImage {
    let data = (0..width as usize * height as usize * 3).map(|i| (i * 37 % 251) as u8).collect();
    RgbImage::new(width, height, data).unwrap()
}

#[test]
fn one_pixel_and_extreme_aspect_ratios_encode_as_the_reference_sizes_them() {
    let _serial = serial();
    for case in ["tiny-clipped", "tiny-unified"] {
        let encoder = tiny(case);
        let reference = reference_sizes(case);
        let preprocessor = encoder.preprocessor(None).unwrap();
        assert_eq!(preprocessor.config().max_soft_tokens, reference.budget, "{case}");
        let text_hidden = encoder.config().text_hidden_size;
        for &ReferenceSize { width, height, resized, soft_tokens } in &reference.images {
            let picture = pattern(width, height);
            let size = preprocessor.resize(&picture).unwrap();
            assert_eq!((size.height(), size.width()), resized, "{case}: {width}x{height}");
            let out = encode_images(&encoder, std::slice::from_ref(&picture), None).unwrap();
            assert_eq!(out.soft_tokens, [soft_tokens], "{case}: {width}x{height}");
            assert_eq!(out.features.shape(), [soft_tokens as i32, text_hidden], "{case}: {width}x{height}");
            assert_finite(&out);
        }
        // All of them in one call: each keeps its count.
        let pictures: Vec<RgbImage> = reference.images.iter().map(|i| pattern(i.width, i.height)).collect();
        let out = encode_images(&encoder, &pictures, None).unwrap();
        assert_eq!(out.soft_tokens, reference.images.iter().map(|i| i.soft_tokens).collect::<Vec<_>>(), "{case}");
    }
}

#[test]
fn a_zero_budget_is_an_invalid_argument() {
    let _serial = serial();
    for case in ["tiny-clipped", "tiny-unified"] {
        // The reference raises too (ValueError from get_aspect_ratio_preserving_size); here a
        // zero budget is not a budget at all: no encoder call can be made with one.
        assert_eq!(reference_sizes(case).zero_budget_error.as_deref(), Some("Attempting to resize to a 0 x 0 image."));
        let err = SoftTokenBudget::new(0).unwrap_err();
        assert_eq!(err, BudgetError::NotPositive { budget: 0 });
        assert_eq!(err.to_string(), "a budget of 0 soft tokens: it must be at least 1");
        let err = Error::from(preprocess::Error::from(err));
        assert_eq!(err.kind(), vision::ErrorKind::Invalid);
    }
}

#[test]
fn absurd_budgets_are_refused_before_anything_is_allocated() {
    let _serial = serial();
    let picture = pattern(37, 23);
    let limit = preprocess::Limits::PILLOW_BOMB_PIXELS;
    // u32::MAX soft tokens: resized images of up to 4 294 967 295 · 9 · 16 pixels.
    for case in ["tiny-clipped", "tiny-unified"] {
        let encoder = tiny(case);
        let err = encode_images(&encoder, std::slice::from_ref(&picture), budget_of(u32::MAX)).unwrap_err();
        match &err {
            Error::Preprocess(preprocess::Error::Budget(BudgetError::Pixels { budget: u32::MAX, .. })) => {
                let message = err.to_string();
                assert!(message.starts_with("a budget of 4294967295 soft tokens resizes images"), "{message}");
                assert!(message.contains(&format!("more than the limit of {limit} pixels")), "{message}");
            }
            other => panic!("{case}: expected an invalid budget, got {other:?}"),
        }
    }
    // gemma4_unified (2×2 patches, 2×2 pooling): 10⁸ soft tokens are 1.6·10⁹ pixels.
    let unified = tiny("tiny-unified");
    let err = encode_images(&unified, std::slice::from_ref(&picture), budget_of(100_000_000)).unwrap_err();
    assert!(matches!(&err, Error::Preprocess(preprocess::Error::Budget(BudgetError::Pixels { .. }))), "{err:?}");
    assert!(err.to_string().contains("up to 1600000000 pixels"), "{err}");

    // gemma4 (4×4 patches, 3×3 pooling): 10⁶ soft tokens pass the pixel limit (1.44·10⁸ pixels)
    // but mean 9·10⁶ patches per image, whose attention could never fit: refused before any
    // image is read (the file below does not exist) or resized.
    let gemma4 = tiny("tiny-clipped");
    let rss_before = current_rss_kb();
    let measured = reset_peak_rss();
    let errors = [
        encode_images(&gemma4, std::slice::from_ref(&picture), budget_of(1_000_000)).unwrap_err(),
        gemma4.encode_files(&[Path::new("/nonexistent/image.png")], budget_of(1_000_000)).unwrap_err(),
    ];
    for err in errors {
        match &err {
            Error::TooLarge { what, bytes, limit } => {
                assert_eq!(what, "an image at a budget of 1000000 soft tokens (up to 9000000 patches)");
                assert_eq!(*limit, tensor::memory::max_array_bytes());
                assert!(*bytes > *limit as u128);
            }
            other => panic!("expected the attention to be refused, got {other:?}"),
        }
        let message = err.to_string();
        assert!(
            message.starts_with(
                "attention over an image at a budget of 1000000 soft tokens (up to 9000000 patches) needs about"
            ),
            "{message}"
        );
        assert_eq!(err.kind(), vision::ErrorKind::Invalid);
    }
    // A video's budget per frame is one of the video processor's five.
    let err = encode_video(&gemma4, std::slice::from_ref(&picture), budget_of(1_000_000)).unwrap_err();
    assert!(
        matches!(&err, Error::Preprocess(preprocess::Error::Budget(BudgetError::NotAVideoBudget { .. }))),
        "{err:?}"
    );
    if measured {
        let grown = peak_rss_kb().saturating_sub(rss_before);
        assert!(grown < 64 * 1024, "the peak resident set grew by {grown} kB while refusing budgets");
    }
}

#[test]
fn oversized_prepared_inputs_are_refused_before_allocation() {
    let _serial = serial();
    let encoder = tiny("tiny-clipped");
    // A hand-built input claiming 40 000 × 40 000 pixels with no data behind it.
    let claimed = preprocess::PixelValues { data: Vec::new(), height: 40_000, width: 40_000, soft_tokens: 1 };
    let err = encoder.encode(&[vision::PreparedImage::Pixels(claimed)]).unwrap_err();
    assert!(
        matches!(&err, Error::TooLarge { what, .. } if what == "a batch of 1 image(s) of 100000000 patches"),
        "{err:?}"
    );
    // Fewer patches than one pooling window (2 patches of 4×4, pooled 3×3): the reference's
    // pooler divides by zero; here a typed error, as for a short patch sequence.
    let small = preprocess::PixelValues { data: vec![0.5; 3 * 8 * 4], height: 8, width: 4, soft_tokens: 0 };
    let err = encoder.encode(&[vision::PreparedImage::Pixels(small)]).unwrap_err();
    assert!(matches!(&err, Error::Input { what } if what == "2 patches are fewer than one pooling window"), "{err:?}");
    // A consistent size with too little data is a shape error from the array constructor.
    let short = preprocess::PixelValues { data: vec![0.5; 10], height: 24, width: 24, soft_tokens: 4 };
    let err = encoder.encode(&[vision::PreparedImage::Pixels(short)]).unwrap_err();
    assert!(matches!(&err, Error::Tensor(tensor::Error::Shape { op: "from_slice", .. })), "{err:?}");
}

#[test]
fn hand_built_inputs_with_extreme_sizes_or_positions_are_errors_not_overflows() {
    let _serial = serial();
    let encoder = tiny("tiny-clipped");
    // Sizes whose patch count overflows `usize`: refused as too large, before anything is read.
    let huge = preprocess::PixelValues { data: Vec::new(), height: usize::MAX, width: usize::MAX, soft_tokens: 1 };
    let err = encoder.encode(&[vision::PreparedImage::Pixels(huge)]).unwrap_err();
    match &err {
        Error::TooLarge { what, .. } => assert_eq!(what, &format!("a batch of 1 image(s) of {} patches", usize::MAX)),
        other => panic!("expected the batch to be refused, got {other:?}"),
    }

    // Position ids at the ends of i64 (the reference's ids are small grid coordinates): the host
    // count of kept rows saturates instead of overflowing, and stays within the pooled slots.
    let preprocessor = encoder.preprocessor(budget_of(6)).unwrap();
    let frame = preprocessor.gemma4_video_frame(&pattern(37, 23)).unwrap();
    for extreme in [i64::MAX, i64::MIN] {
        let mut patches = frame.clone();
        patches.positions[..6].fill(extreme);
        let out = encoder.encode(&[vision::PreparedImage::Patches(patches)]).unwrap();
        assert!(out.soft_tokens[0] <= 6, "{extreme}: {:?}", out.soft_tokens);
        assert_eq!(out.features.shape(), [out.soft_tokens[0] as i32, encoder.config().text_hidden_size]);
    }
    let counts = vision::Pooler::valid_counts(&[i64::MAX, i64::MAX, 0, 0, 1, 1, i64::MAX, 1], 1, 1);
    assert_eq!(counts, [1]);
}
