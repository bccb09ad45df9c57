//! Pillow-exact bicubic resize: fixtures Pillow computed, the plain twin, the identity.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::resize::{resize_bicubic_reference, vertical_first};
use preprocess::{RgbImage, resize_bicubic};
use proptest::prelude::*;
use std::path::Path;

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

fn manifest() -> serde_json::Value {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).expect("manifest.json");
    serde_json::from_str(&text).expect("manifest parses")
}

fn dims(value: &serde_json::Value) -> (u32, u32) {
    (value[0].as_u64().expect("width") as u32, value[1].as_u64().expect("height") as u32)
}

#[test]
fn matches_pillow_bytes_on_every_fixture() {
    let manifest = manifest();
    let cases = manifest["resize"].as_array().expect("resize cases");
    assert!(cases.len() >= 10);
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let (iw, ih) = dims(&case["in"]);
        let (ow, oh) = dims(&case["out"]);
        let src = std::fs::read(fixtures().join(format!("resize/{name}.in"))).expect("input");
        let want = std::fs::read(fixtures().join(format!("resize/{name}.out"))).expect("output");
        let image = RgbImage::new(iw, ih, src).expect("valid image");
        let fast = resize_bicubic(&image, ow, oh).expect("resize");
        let plain = resize_bicubic_reference(&image, ow, oh).expect("reference resize");
        assert_eq!((fast.width(), fast.height()), (ow, oh), "{name}");
        assert!(fast.data() == want.as_slice(), "{name}: fast path differs from Pillow");
        assert!(plain.data() == want.as_slice(), "{name}: plain twin differs from Pillow");
    }
}

#[test]
fn pass_order_follows_pillow_13() {
    // Width up, height down: vertical first.
    assert!(vertical_first(451, 300, 480, 288));
    // Height loses more than twice the width's loss: vertical first; exactly twice: horizontal.
    assert!(vertical_first(300, 300, 200, 99));
    assert!(!vertical_first(300, 300, 200, 100));
    // Height grows: horizontal first whatever the width does.
    assert!(!vertical_first(13, 215, 286, 330));
    assert!(!vertical_first(4000, 3000, 912, 672));
}

#[test]
fn zero_target_is_an_error() {
    let image = RgbImage::new(2, 2, vec![7; 12]).expect("image");
    assert!(resize_bicubic(&image, 0, 5).is_err());
    assert!(resize_bicubic(&image, 5, 0).is_err());
}

fn image_strategy() -> impl Strategy<Value = RgbImage> {
    (1u32..40, 1u32..40).prop_flat_map(|(w, h)| {
        proptest::collection::vec(any::<u8>(), (w * h * 3) as usize)
            .prop_map(move |data| RgbImage::new(w, h, data).expect("sized buffer"))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn fast_path_equals_plain_twin(image in image_strategy(), ow in 1u32..70, oh in 1u32..70) {
        let fast = resize_bicubic(&image, ow, oh).expect("resize");
        let plain = resize_bicubic_reference(&image, ow, oh).expect("reference");
        prop_assert!(fast == plain, "{}x{} -> {ow}x{oh}", image.width(), image.height());
    }

    #[test]
    fn own_size_is_the_identity(image in image_strategy()) {
        let same = resize_bicubic(&image, image.width(), image.height()).expect("resize");
        prop_assert!(same == image);
    }
}
