//! `get_aspect_ratio_preserving_size`: the reference's own outputs, and its contract.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{Error, target_size, video_frame_size};
use proptest::prelude::*;

#[test]
fn matches_the_reference_function() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/manifest.json");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("manifest")).expect("parses");
    let cases = manifest["target_size"].as_array().expect("cases");
    assert!(cases.len() >= 16);
    for case in cases {
        let field = |k: &str| case[k].as_u64().expect("number") as u32;
        let (h, w, max_patches) = (field("height"), field("width"), field("max_patches"));
        let ours = target_size(h, w, 16, max_patches, 3);
        match case.get("target") {
            Some(t) => {
                let want = (t[0].as_u64().expect("th") as u32, t[1].as_u64().expect("tw") as u32);
                assert_eq!(ours.expect("reference succeeded"), want, "{h}x{w} budget {max_patches}");
            }
            None => assert!(
                matches!(ours, Err(Error::ZeroTargetSize { .. })),
                "{h}x{w} budget {max_patches}: reference raised, ours gave {ours:?}"
            ),
        }
    }
}

#[test]
fn documented_examples() {
    assert_eq!(target_size(480, 640, 16, 280 * 9, 3).expect("ok"), (672, 912));
    assert_eq!(target_size(224, 224, 16, 280 * 9, 3).expect("ok"), (768, 768));
    assert_eq!(target_size(1080, 1920, 16, 280 * 9, 3).expect("ok"), (576, 1056));
    assert_eq!(target_size(10, 10000, 16, 280 * 9, 3).expect("ok"), (48, 13440));
    assert_eq!(target_size(480, 640, 16, 70 * 9, 3).expect("ok"), (336, 432));
}

#[test]
fn bad_parameters_are_typed_errors() {
    assert!(matches!(target_size(0, 10, 16, 2520, 3), Err(Error::ZeroSize { .. })));
    assert!(matches!(target_size(10, 10, 0, 2520, 3), Err(Error::InvalidArgument { .. })));
    assert!(matches!(target_size(10, 10, 16, 2520, 0), Err(Error::InvalidArgument { .. })));
    assert!(matches!(target_size(10, 10, 16, 0, 3), Err(Error::ZeroTargetSize { .. })));
    // The video variant has no 0x0 error: its two fix-ups both run (`if`, `if`), and with a
    // budget below one pooled block the second one zeroes the height (resizing then fails).
    assert_eq!(video_frame_size(100, 100, 16, 4, 3).expect("ok"), (0, 48));
    assert_eq!(video_frame_size(300, 400, 16, 630, 3).expect("ok"), (336, 432));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn within_budget_multiple_of_block_and_aspect_kept(h in 1u32..20_000, w in 1u32..20_000, budget in 1u32..1500) {
        let max_patches = budget * 9;
        let (th, tw) = target_size(h, w, 16, max_patches, 3).expect("pool 3 never hits the 0x0 case");
        prop_assert!(th % 48 == 0 && tw % 48 == 0, "{th}x{tw}");
        prop_assert!(th >= 48, "{th}x{tw}");
        prop_assert!(u64::from(th / 48) * u64::from(tw / 48) <= u64::from(budget), "{th}x{tw} over {budget}");
        // Unless a side was forced up to one block, both sides are the aspect-preserving size
        // rounded down to a block: the aspect ratio is kept to within one block per side.
        let factor = (f64::from(max_patches) * 256.0 / (f64::from(h) * f64::from(w))).sqrt();
        let (exact_h, exact_w) = (factor * f64::from(h), factor * f64::from(w));
        if exact_h >= 48.0 && exact_w >= 48.0 {
            prop_assert!(f64::from(th) <= exact_h + 1e-6 && exact_h < f64::from(th) + 48.0);
            prop_assert!(f64::from(tw) <= exact_w + 1e-6 && exact_w < f64::from(tw) + 48.0);
        }
    }
}
