//! PSD files in Lab colour against Pillow: files written byte by byte by `make_psd_lab.py`
//! (`fixtures/psd_lab/`), raw and PackBits, with an extra channel, and some Pillow refuses, each
//! with what mlx-vlm's `load_image` on Pillow 13 made of it (Pillow's `LAB` image through
//! Little CMS to RGB). Every file Pillow reads decodes to Pillow's bytes; every file Pillow
//! refuses is refused; nothing panics.

extern crate gemma_vision_preprocess as preprocess;

mod pillow_answer;

use pillow_answer::{Outcome, compare};
use preprocess::{DecodeOptions, decode};
use std::path::Path;

#[test]
fn every_lab_file_gives_pillows_pixels_or_is_refused_as_pillow_refuses_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/psd_lab");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).expect("manifest")).expect("json");
    let (mut exact, mut refused, mut failures) = (0, 0, Vec::new());
    for case in manifest["cases"].as_array().expect("cases") {
        let name = case["file"].as_str().expect("file");
        let bytes = std::fs::read(dir.join(name)).expect("fixture");
        match compare(name, decode(&bytes, &DecodeOptions::default()), &case["pillow"]) {
            Outcome::Exact => exact += 1,
            Outcome::Refused => refused += 1,
            Outcome::Failure(failure) => failures.push(failure),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!((exact, refused), (6, 4));
}
