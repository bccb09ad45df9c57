//! PPM/PGM/PBM/PFM, TGA, QOI and DDS: Pillow's RGB bytes for every fixture Pillow reads, an
//! error for every fixture it refuses, and typed errors (never a panic, never a large
//! allocation) for hostile inputs.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, Error, Format, Limits, RgbImage, decode};
use std::path::Path;

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/formats"))
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn decode_default(bytes: &[u8]) -> preprocess::Result<RgbImage> {
    decode(bytes, &DecodeOptions::default())
}

fn manifest() -> Vec<serde_json::Value> {
    let text = String::from_utf8(read("manifest.json")).expect("utf8");
    serde_json::from_str::<serde_json::Value>(&text).expect("manifest").as_array().expect("cases").clone()
}

#[test]
fn fixtures_decode_as_pillow_decodes_them() {
    let cases = manifest();
    assert!(cases.len() >= 30);
    for case in cases {
        let name = case["image"].as_str().expect("image");
        let result = decode_default(&read(name));
        if let Some(error) = case["error"].as_str() {
            match result {
                Ok(image) => {
                    panic!("{name}: read as {}x{}, Pillow refuses it ({error})", image.width(), image.height())
                }
                Err(e) => assert!(!matches!(e, Error::DecoderPanic { .. }), "{name}: {e}"),
            }
            continue;
        }
        let image = result.unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = read(case["rgb"].as_str().expect("rgb"));
        let size = (case["width"].as_u64().expect("w") as u32, case["height"].as_u64().expect("h") as u32);
        assert_eq!((image.width(), image.height()), size, "{name}");
        let differing = image.data().iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(differing, 0, "{name}: {differing} bytes differ from Pillow");
    }
}

#[test]
fn truncated_and_corrupted_fixtures_fail_without_panicking() {
    for case in manifest() {
        let name = case["image"].as_str().expect("image");
        let bytes = read(name);
        let mut variants: Vec<Vec<u8>> = (0..bytes.len()).step_by(3).map(|n| bytes[..n].to_vec()).collect();
        for at in (0..bytes.len()).step_by(5) {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0xA5;
            variants.push(flipped);
        }
        for variant in variants {
            if let Err(Error::DecoderPanic { message, .. }) = decode_default(&variant) {
                panic!("{name} ({} bytes): decoder panicked: {message}", variant.len());
            }
        }
    }
}

/// A header announcing more pixels than the limit is refused before any allocation.
fn assert_too_many_pixels(bytes: &[u8]) {
    let limits = Limits { max_pixels: 1000 };
    match decode(bytes, &DecodeOptions { limits, ..Default::default() }) {
        Err(Error::TooManyPixels { .. }) => {}
        other => panic!("{:?}: {other:?}", &bytes[..bytes.len().min(20)]),
    }
}

#[test]
fn ppm_headers_are_checked_against_the_limits() {
    assert_eq!(Format::sniff(b"P6 1 1 255\n\0\0\0").expect("ppm"), Format::Ppm);
    assert_too_many_pixels(b"P6\n100 100\n255\n");
    assert_too_many_pixels(b"P1\n100 100\n");
    assert_too_many_pixels(b"Pf\n100 100\n-1\n");
    assert_too_many_pixels(b"P5\n4000000000 4000000000\n65535\n");
    // Malformed headers are typed errors.
    for bad in [&b"P6"[..], b"P6 x 1 255\n", b"P6 1 1 -255\n", b"Pf 1 1 nan\n", b"P3 1 1 255\n1 2"] {
        assert!(
            matches!(decode_default(bad), Err(Error::Malformed { .. } | Error::Truncated { .. })),
            "{bad:?}: {:?}",
            decode_default(bad)
        );
    }
}

#[test]
fn tga_headers_are_checked_against_the_limits() {
    let header = |kind: u8, depth: u8| {
        let mut h = vec![0u8, 0, kind, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, depth, 0x20];
        h.extend_from_slice(&[0x7f; 40]);
        h
    };
    for (kind, depth) in [(2, 24), (10, 32), (3, 8), (11, 16), (3, 1)] {
        assert_eq!(Format::sniff(&header(kind, depth)).expect("tga"), Format::Tga);
        assert_too_many_pixels(&header(kind, depth));
    }
    // An image type Pillow's `_open` rejects is not a TGA file.
    assert!(Format::sniff(&header(4, 8)).is_err());
}

#[test]
fn qoi_headers_are_checked_against_the_limits() {
    let mut huge = b"qoif\xff\xff\xff\xff\xff\xff\xff\xff\x04\x00".to_vec();
    huge.extend_from_slice(&[0xFE; 64]);
    assert_eq!(Format::sniff(&huge).expect("qoi"), Format::Qoi);
    assert_too_many_pixels(&huge);
    // Within the limits but with almost no data: refused before the pixels are allocated.
    let empty = b"qoif\0\0\x27\x10\0\0\x27\x10\x03\0\xfe\x01\x02\x03";
    assert!(matches!(decode_default(empty), Err(Error::Truncated { .. })));
    // A 1-pixel-wide QOI file passes GIMP brush's `_accept` but not its `_open`.
    let narrow = b"qoif\0\0\0\x01\0\0\0\x01\x04\0\x35";
    assert_eq!(Format::sniff(narrow).expect("qoi"), Format::Qoi);
}

#[test]
fn dds_headers_are_checked_against_the_limits() {
    let mut header = b"DDS \x7c\0\0\0\x07\x10\0\0".to_vec();
    header.extend_from_slice(&[0xff, 0xff, 0xff, 0x0f, 0xff, 0xff, 0xff, 0x0f]);
    header.resize(76, 0);
    header.extend_from_slice(&[32, 0, 0, 0, 4, 0, 0, 0]);
    header.extend_from_slice(b"DXT1");
    header.resize(128, 0);
    assert_eq!(Format::sniff(&header).expect("dds"), Format::Dds);
    assert_too_many_pixels(&header);
}
