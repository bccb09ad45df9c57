//! PCD against Pillow: files built from the recipes of `make_pcd.py` (`fixtures/pcd/`; a PCD
//! file is 786432 bytes, so the manifest holds how to make each one): the base image with each
//! orientation byte (upright, turned a quarter either way), longer files, and files cut short,
//! each with what mlx-vlm's `load_image` on Pillow 13 made of it. Every file Pillow reads
//! decodes to Pillow's bytes; every file Pillow refuses is refused, a cut one with Pillow's
//! message; nothing panics.

extern crate gemma_vision_preprocess as preprocess;

mod pillow_answer;

use pillow_answer::{Outcome, compare};
use preprocess::{DecodeOptions, Error, Format, Limits, decode};
use std::path::Path;

const DATA: usize = 96 * 2048;

/// `make_pcd.py`'s `pcd_file`: `PCD_` at 2048, the orientation byte at 2048 + 1538, `data`
/// bytes of the hash pattern from 96 * 2048, cut to `length` bytes.
fn pcd_file(orientation: u8, data: usize, length: Option<usize>) -> Vec<u8> {
    let mut out = vec![0u8; DATA];
    out[2048..2052].copy_from_slice(b"PCD_");
    out[2048 + 1538] = orientation;
    out.extend((0..data as u64).map(|k| ((k.wrapping_mul(2_654_435_761) as u32) >> 13) as u8));
    out.truncate(length.unwrap_or(usize::MAX));
    out
}

fn cases() -> Vec<(String, Vec<u8>, serde_json::Value)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pcd/manifest.json");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("manifest")).expect("json");
    let cases = manifest["cases"].as_array().expect("cases");
    cases
        .iter()
        .map(|case| {
            let orientation = case["orientation"].as_u64().expect("orientation") as u8;
            let data = case["data"].as_u64().expect("data") as usize;
            let length = case["length"].as_u64().map(|n| n as usize);
            let name = case["name"].as_str().expect("name").to_owned();
            (name, pcd_file(orientation, data, length), case["pillow"].clone())
        })
        .collect()
}

#[test]
fn every_pcd_file_gives_pillows_pixels_or_is_refused_as_pillow_refuses_it() {
    let (mut exact, mut refused, mut failures) = (0, 0, Vec::new());
    for (name, bytes, pillow) in cases() {
        let ours = decode(&bytes, &DecodeOptions::default());
        if let (Err(Error::Truncated { format, detail }), Some(error)) = (&ours, pillow["error"].as_str()) {
            assert_eq!((*format, format!("OSError: {detail}").as_str()), ("PCD", error), "{name}");
        }
        match compare(&name, ours, &pillow) {
            Outcome::Exact => exact += 1,
            Outcome::Refused => refused += 1,
            Outcome::Failure(failure) => failures.push(failure),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!((exact, refused), (6, 6));
}

#[test]
fn the_orientation_is_applied_whatever_the_exif_option_says() {
    let turned = pcd_file(1, 3 * 768 * 256, None);
    let options = DecodeOptions { apply_exif_orientation: false, ..Default::default() };
    let image = decode(&turned, &options).expect("PCD");
    assert_eq!((image.width(), image.height()), (512, 768));
}

#[test]
fn the_size_is_checked_against_the_limits_and_a_file_without_the_block_is_not_pcd() {
    let options = DecodeOptions { limits: Limits { max_pixels: 1000 }, ..Default::default() };
    let file = pcd_file(0, 3 * 768 * 256, None);
    assert!(matches!(decode(&file, &options), Err(Error::TooManyPixels { .. })));
    assert_eq!(Format::sniff(&file).expect("PCD").name(), "PCD");
    assert!(Format::sniff(&file[..2048 + 1538]).is_err());
}
