//! AVIF beyond the corpus digests (`pillow_corpus.rs` holds Pillow's pixels for every AVIF test
//! image): the chroma layouts, ranges and alpha kinds the corpus lacks (`fixtures/avif/`, written
//! and decoded by Pillow 13.0.0, `make_avif.py`), sizes checked against the limits before
//! decoding, and damaged files refused without a panic. The last two take Pillow 13.0.0's AVIF
//! test images (`cargo xtask setup` fetches them).

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, Error, Limits, decode};
use std::path::{Path, PathBuf};

/// Fixtures Pillow reads that this crate refuses by name, each with the reason.
const KNOWN_GAPS: &[(&str, &str)] = &[];

fn fnv1a64(data: &[u8]) -> String {
    let hash = data.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    format!("{hash:016x}")
}

#[test]
fn every_fixture_decodes_to_pillows_bytes_or_is_a_known_gap() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/avif");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest")).expect("json");
    let cases = manifest["cases"].as_array().expect("cases");
    assert!(cases.len() >= 8);
    for case in cases {
        let file = case["file"].as_str().expect("file");
        let bytes = std::fs::read(dir.join(file)).expect(file);
        match decode(&bytes, &DecodeOptions::default()) {
            Err(Error::Unsupported { format: "AVIF", .. }) if KNOWN_GAPS.iter().any(|(gap, _)| *gap == file) => {}
            Ok(image) => {
                let want = (case["width"].as_u64(), case["height"].as_u64(), case["fnv1a64"].as_str());
                let got =
                    (Some(u64::from(image.width())), Some(u64::from(image.height())), Some(fnv1a64(image.data())));
                assert_eq!((got.0, got.1, got.2.as_deref()), want, "{file}");
            }
            Err(e) => panic!("{file}: {e}"),
        }
    }
}

fn avif_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/corpus/pillow-13.0.0/Tests/images/avif")
}

fn read(name: &str) -> Vec<u8> {
    let path = avif_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (run `cargo xtask setup`)", path.display()))
}

/// Where the 4-byte type `kind` first appears in `bytes`.
fn find(bytes: &[u8], kind: &[u8; 4]) -> usize {
    bytes.windows(4).position(|w| w == kind).unwrap_or_else(|| panic!("no {kind:?} box"))
}

#[test]
fn the_announced_size_is_checked_against_the_limits_before_decoding() {
    let mut bytes = read("hopper.avif");
    let ispe = find(&bytes, b"ispe");
    // ispe: type, version and flags, then width and height.
    bytes[ispe + 8..ispe + 16].copy_from_slice(&[0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60]);
    match decode(&bytes, &DecodeOptions::default()) {
        Err(Error::TooManyPixels { width: 60000, height: 60000, .. }) => {}
        other => panic!("{other:?}"),
    }
    let small = DecodeOptions { limits: Limits { max_pixels: 100 }, ..Default::default() };
    match decode(&read("hopper.avif"), &small) {
        Err(Error::TooManyPixels { width: 128, height: 128, max_pixels: 100, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_frame_of_another_size_than_its_item_is_refused_by_name() {
    let mut bytes = read("hopper.avif");
    let ispe = find(&bytes, b"ispe");
    bytes[ispe + 8..ispe + 16].copy_from_slice(&[0, 0, 0, 64, 0, 0, 0, 64]);
    match decode(&bytes, &DecodeOptions::default()) {
        Err(Error::Unsupported { format: "AVIF", detail }) => assert!(detail.contains("128x128"), "{detail}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn damaged_files_are_errors_not_panics() {
    let options = DecodeOptions::default();
    for name in ["hopper.avif", "transparency.avif", "star.avifs", "exif.avif", "rot1mir1.avif"] {
        let bytes = read(name);
        let mut inputs: Vec<Vec<u8>> = Vec::new();
        for cut in [12, 40, 100, 300, bytes.len() / 3, bytes.len() / 2, bytes.len() - 1] {
            inputs.push(bytes[..cut.min(bytes.len())].to_vec());
        }
        // Every third container byte set to 0x00 and to 0xFF in turn, in the files with the
        // smallest frames (each damaged copy is decoded).
        let container_bytes = if name.starts_with("rot") || name.starts_with("exif") { 0 } else { 600 };
        for at in (8..bytes.len().min(container_bytes)).step_by(3) {
            for value in [0x00, 0xFF] {
                let mut damaged = bytes.clone();
                damaged[at] = value;
                inputs.push(damaged);
            }
        }
        for (i, input) in inputs.iter().enumerate() {
            match decode(input, &options) {
                Err(Error::DecoderPanic { message, .. }) => panic!("{name} input {i}: panicked: {message}"),
                Ok(image) => assert!(image.width() > 0 && image.height() > 0, "{name} input {i}"),
                Err(_) => {}
            }
        }
    }
}
