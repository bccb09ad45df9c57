//! Two-dimensional Group 3 TIFFs against Pillow: files libtiff encoded through Pillow 13 with
//! T4Options bit 0 (`fixtures/tiff/group3_2d/`, made by `make_group3_2d.py` there) and damaged
//! copies of some (bytes XORed in the coded data, cut short), each with what mlx-vlm's
//! `load_image` made of it. Every file Pillow reads decodes to Pillow's bytes; every file
//! Pillow refuses is refused; nothing panics.

extern crate gemma_vision_preprocess as preprocess;

mod damage;
mod pillow_answer;

use pillow_answer::{Outcome, compare};
use preprocess::{DecodeOptions, decode};
use std::path::Path;

#[test]
fn every_file_gives_pillows_pixels_or_is_refused_as_pillow_refuses_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiff/group3_2d");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).expect("manifest")).expect("json");
    let (mut exact, mut refused, mut failures) = (0, 0, Vec::new());
    for case in manifest["cases"].as_array().expect("cases") {
        let base = case["base"].as_str().expect("base");
        let bytes = damage::apply(&std::fs::read(dir.join(base)).expect("fixture"), case);
        let name = format!("{base} ({})", case["damage"].as_str().expect("damage"));
        match compare(&name, decode(&bytes, &DecodeOptions::default()), &case["pillow"]) {
            Outcome::Exact => exact += 1,
            Outcome::Refused => refused += 1,
            Outcome::Failure(failure) => failures.push(failure),
        }
    }
    println!("group3 2-D: exact {exact} / refused as Pillow {refused}");
    assert!(failures.is_empty(), "{} cases:\n{}", failures.len(), failures.join("\n"));
    assert_eq!((exact, refused), (46, 13));
}
