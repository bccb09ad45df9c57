//! JPEG 2000 against Pillow: files OpenJPEG wrote through Pillow at many settings
//! (`fixtures/jpeg2000/`, made by `make_jpeg2000.py` there), some with their `colr` box
//! rewritten or a `pclr` box (a palette) added, and damaged versions (cut short, bytes XORed)
//! of some, each with what mlx-vlm's `load_image` on Pillow 13 made of it (on aarch64 Linux,
//! the aarch64 wheels' answers where they differ, `aarch64.json`). Every file Pillow reads
//! decodes to Pillow's bytes; every file Pillow refuses is refused; nothing panics.

extern crate gemma_vision_preprocess as preprocess;

mod damage;
mod pillow_answer;

use pillow_answer::{Outcome, compare};
use preprocess::{DecodeOptions, Error, Limits, decode};
use std::collections::BTreeMap;
use std::path::Path;

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jpeg2000")
}

/// Each case's bytes (its base cut short or XORed) and what Pillow made of them.
fn cases() -> Vec<(String, Vec<u8>, serde_json::Value)> {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir().join("manifest.json")).expect("manifest")).expect("json");
    // On aarch64 Linux the reference is the aarch64 wheels' Pillow, whose OpenJPEG gives other
    // bits for a few cases (`cargo xtask emulate` checks the record against it).
    let aarch64: serde_json::Value = if cfg!(all(target_arch = "aarch64", target_os = "linux")) {
        serde_json::from_str(&std::fs::read_to_string(dir().join("aarch64.json")).expect("aarch64.json")).expect("json")
    } else {
        serde_json::json!({ "cases": {} })
    };
    let mut bases: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut out = Vec::new();
    for (index, case) in manifest["cases"].as_array().expect("cases").iter().enumerate() {
        let base = case["base"].as_str().expect("base");
        let original = bases.entry(base.to_owned()).or_insert_with(|| std::fs::read(dir().join(base)).expect("base"));
        let bytes = damage::apply(original, case);
        let name = format!("{base} ({})", case["damage"].as_str().expect("damage"));
        let pillow = aarch64["cases"].get(index.to_string()).unwrap_or(&case["pillow"]);
        out.push((name, bytes, pillow.clone()));
    }
    out
}

#[test]
fn every_file_gives_pillows_pixels_or_is_refused_as_pillow_refuses_it() {
    let cases = cases();
    assert!(cases.len() > 100, "{} cases", cases.len());
    let (mut exact, mut refused) = (0, 0);
    let mut failures = Vec::new();
    for (name, bytes, pillow) in &cases {
        match compare(name, decode(bytes, &DecodeOptions::default()), pillow) {
            Outcome::Exact => exact += 1,
            Outcome::Refused => refused += 1,
            Outcome::Failure(failure) => failures.push(failure),
        }
    }
    println!("jpeg2000: {} cases: exact {exact} / refused as Pillow {refused}", cases.len());
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert!(exact >= 40 && refused >= 20, "exact {exact}, refused {refused}");
}

#[test]
fn the_size_is_checked_against_the_limits_before_decoding() {
    let bytes = std::fs::read(dir().join("rgb_tiled.jp2")).expect("fixture");
    let options = DecodeOptions { limits: Limits { max_pixels: 45 * 37 - 1 }, ..DecodeOptions::default() };
    let error = decode(&bytes, &options).expect_err("over the limit");
    assert!(matches!(error, Error::TooManyPixels { width: 45, height: 37, .. }), "{error}");
    let options = DecodeOptions { limits: Limits { max_pixels: 45 * 37 }, ..DecodeOptions::default() };
    assert!(decode(&bytes, &options).is_ok());
}

#[test]
fn a_codestream_larger_than_its_jp2_header_is_refused_before_its_tiles() {
    // ihdr says 37x29; the SIZ segment is patched to a 60000x60000 image of one tile. OpenJPEG
    // refuses the mismatch while reading the header (as it does under Pillow), before it sizes
    // any tile from the codestream.
    let mut bytes = std::fs::read(dir().join("rgb_lossless.jp2")).expect("fixture");
    let siz = bytes.windows(4).position(|w| w == b"\xff\x4f\xff\x51").expect("SOC SIZ") + 4;
    for at in [4, 8, 20, 24] {
        bytes[siz + at..siz + at + 4].copy_from_slice(&60000u32.to_be_bytes());
    }
    let error = decode(&bytes, &DecodeOptions::default()).expect_err("refused");
    assert!(
        matches!(&error, Error::Malformed { format: "JPEG2000", detail } if detail.contains("opj_read_header")),
        "{error}"
    );
}
