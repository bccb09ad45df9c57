//! BLP against Pillow: files Pillow's BLP writer made and files written byte by byte by
//! `make_blp.py` (`fixtures/blp/`): BLP1 JPEG (RGB, grey, CMYK and YCCK data; a JPEG wider or
//! smaller than the BLP), BLP1 and BLP2 palette images with and without alpha, DXT1/DXT3/DXT5
//! with and without the alpha flag at sizes not a multiple of 4, files Pillow refuses (cut
//! short, unknown encodings, raw BGRA), and two bare JPEGs with Adobe transforms libjpeg does
//! not know (the JPEG decoder the BLP1 JPEG path shares), each with what mlx-vlm's
//! `load_image` on Pillow 13 made of it. Every file Pillow reads decodes to Pillow's bytes;
//! every file Pillow refuses is refused; nothing panics. Also: the limits are checked before
//! allocating, and cut or corrupted files are errors, not panics.

extern crate gemma_vision_preprocess as preprocess;

mod pillow_answer;

use pillow_answer::{Outcome, compare};
use preprocess::{DecodeOptions, Error, Limits, decode};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/blp")
}

fn cases() -> Vec<(String, Vec<u8>, serde_json::Value)> {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir().join("manifest.json")).expect("manifest")).expect("json");
    let cases = manifest["cases"].as_array().expect("cases");
    cases
        .iter()
        .map(|case| {
            let name = case["file"].as_str().expect("file").to_owned();
            let bytes = std::fs::read(dir().join(&name)).expect("fixture");
            (name, bytes, case["pillow"].clone())
        })
        .collect()
}

#[test]
fn every_blp_file_gives_pillows_pixels_or_is_refused_as_pillow_refuses_it() {
    let (mut exact, mut refused, mut failures) = (0, 0, Vec::new());
    for (name, bytes, pillow) in cases() {
        match compare(&name, decode(&bytes, &DecodeOptions::default()), &pillow) {
            Outcome::Exact => exact += 1,
            Outcome::Refused => refused += 1,
            Outcome::Failure(failure) => failures.push(failure),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!((exact, refused), (25, 21));
}

#[test]
fn the_size_is_checked_against_the_limits_before_the_data_is_read() {
    let options = DecodeOptions { limits: Limits { max_pixels: 100 }, ..Default::default() };
    for (name, bytes, pillow) in cases() {
        let Some(width) = pillow["width"].as_u64() else { continue };
        let pixels = width * pillow["height"].as_u64().expect("height");
        match decode(&bytes, &options) {
            Err(Error::TooManyPixels { max_pixels: 100, .. }) => assert!(pixels > 100, "{name}"),
            Ok(_) => assert!(pixels <= 100, "{name}"),
            Err(e) => panic!("{name}: {e}"),
        }
    }
    // 8192 x 8192 DXT1 with no data: refused from the header, or (within the default limits)
    // from the file's length before the image is allocated.
    let mut huge = b"BLP2\x01\0\0\0\x02\0\0\0\0\x20\0\0\0\x20\0\0".to_vec();
    huge.extend([0u8; 128 + 1024]);
    assert!(matches!(decode(&huge, &options), Err(Error::TooManyPixels { .. })));
    assert!(matches!(decode(&huge, &DecodeOptions::default()), Err(Error::Truncated { format: "BLP", .. })));
}

#[test]
fn cut_and_corrupted_files_are_errors_naming_blp_not_panics() {
    for (name, bytes, _) in cases() {
        for cut in (0..bytes.len()).step_by(7) {
            if let Err(Error::DecoderPanic { .. }) = decode(&bytes[..cut], &DecodeOptions::default()) {
                panic!("{name} cut at {cut}");
            }
        }
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..50 {
            let mut damaged = bytes.clone();
            for _ in 0..4 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let at = (state >> 33) as usize % damaged.len();
                damaged[at] = (state >> 20) as u8;
            }
            match decode(&damaged, &DecodeOptions::default()) {
                Err(e @ Error::DecoderPanic { .. }) => panic!("{name}: {e}"),
                Err(
                    Error::Malformed { format, .. }
                    | Error::Truncated { format, .. }
                    | Error::Unsupported { format, .. },
                ) => {
                    assert!(format == "BLP" || !damaged.starts_with(b"BLP"), "{name}: {format}");
                }
                _ => {}
            }
        }
    }
}
