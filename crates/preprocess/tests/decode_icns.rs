//! ICNS against Pillow (`fixtures/icns/`, made by `make_icns.py` there): icon files Pillow
//! saved, and files put together block by block (embedded PNGs of every mode and JPEG 2000
//! images, RGB planes interleaved or run-length coded with and without masks, the block walk's
//! edge cases, damaged and hostile blocks). Every file Pillow identifies gets its format name;
//! every file Pillow reads decodes to its bytes (by FNV-1a 64 digest); every file it refuses is
//! refused, without a panic.

extern crate gemma_vision_preprocess as preprocess;

mod damage;
mod pillow_answer;

use pillow_answer::{Outcome, compare};
use preprocess::{DecodeOptions, Error, Format, Limits, decode};
use std::path::{Path, PathBuf};

fn fixtures() -> (PathBuf, Vec<serde_json::Value>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/icns");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).expect("manifest")).expect("json");
    (dir, manifest["cases"].as_array().expect("cases").clone())
}

#[test]
fn every_icon_file_decodes_as_pillow_decodes_it_or_is_refused() {
    let (dir, cases) = fixtures();
    assert!(cases.len() >= 55, "{} cases", cases.len());
    let (mut exact, mut refused, mut failures) = (0, 0, Vec::new());
    for case in &cases {
        let file = case["file"].as_str().expect("file");
        let bytes = std::fs::read(dir.join(file)).expect("fixture");
        match (Format::sniff(&bytes), case["format"].as_str()) {
            (Ok(ours), Some(pillow)) if ours.name() == pillow => {}
            (Err(_), None) => {}
            (ours, pillow) => failures.push(format!("{file}: identified as {ours:?}, Pillow: {pillow:?}")),
        }
        match compare(file, decode(&bytes, &DecodeOptions::default()), &case["pillow"]) {
            Outcome::Exact => exact += 1,
            Outcome::Refused => refused += 1,
            Outcome::Failure(failure) => failures.push(failure),
        }
    }
    println!("icns: exact {exact}, refused as Pillow refuses {refused}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(exact >= 35 && refused >= 15, "exact {exact}, refused {refused}");
}

#[test]
fn refusals_of_identified_files_name_icns() {
    let (dir, cases) = fixtures();
    for case in cases.iter().filter(|c| c["format"] == "ICNS" && c["pillow"].get("error").is_some()) {
        let file = case["file"].as_str().expect("file");
        let error = decode(&std::fs::read(dir.join(file)).expect("fixture"), &DecodeOptions::default())
            .expect_err(file)
            .to_string();
        assert!(error.contains("ICNS") || error.contains("pixels exceeds the limit"), "{file}: {error}");
    }
}

#[test]
fn an_embedded_image_over_the_limits_is_refused_before_it_is_decoded() {
    let (dir, _) = fixtures();
    let bytes = std::fs::read(dir.join("png_rgba.icns")).expect("fixture");
    let options = DecodeOptions { limits: Limits { max_pixels: 128 * 127 }, ..Default::default() };
    assert!(matches!(decode(&bytes, &options), Err(Error::TooManyPixels { width: 128, height: 128, .. })));
    let planes = std::fs::read(dir.join("it32_rle_mask.icns")).expect("fixture");
    assert!(matches!(decode(&planes, &options), Err(Error::TooManyPixels { width: 128, height: 128, .. })));
}

#[test]
fn damaged_icon_files_never_panic() {
    let (dir, _) = fixtures();
    let mut seed = 0x1C45_0001u64;
    for name in ["saved_rgba.icns", "it32_rle_mask.icns", "il32_raw.icns", "jp2_rgba.icns", "largest_size_wins.icns"] {
        let bytes = std::fs::read(dir.join(name)).expect("fixture");
        damage::cuts_and_corruptions_never_panic(name, &bytes, 200, &mut seed);
    }
}
