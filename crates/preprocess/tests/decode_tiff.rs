//! TIFF: Pillow's RGB bytes for small fixtures of every mode and compression Pillow writes, the
//! tiled and planar files of Pillow's corpus against their contiguous twins, and typed errors,
//! never a panic, for hostile files (`pillow_corpus.rs` checks every corpus TIFF against Pillow).

extern crate gemma_vision_preprocess as preprocess;

mod damage;

use preprocess::{DecodeOptions, Error, Limits, RgbImage, decode};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiff")
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn decode_default(bytes: &[u8]) -> preprocess::Result<RgbImage> {
    decode(bytes, &DecodeOptions::default())
}

/// The hash `make_tiff_fixtures.py` records for Pillow's bytes.
#[test]
fn every_fixture_decodes_to_pillows_bytes() {
    let manifest: serde_json::Value =
        serde_json::from_str(&String::from_utf8(read("manifest.json")).expect("utf8")).expect("manifest");
    let cases = manifest.as_array().expect("cases");
    assert!(cases.len() >= 20);
    for case in cases {
        let name = case["image"].as_str().expect("image");
        let image = decode_default(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let size = (case["width"].as_u64().expect("w") as u32, case["height"].as_u64().expect("h") as u32);
        assert_eq!((image.width(), image.height()), size, "{name}");
        let want = read(&format!("{name}.rgb"));
        let differing = image.data().iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(differing, 0, "{name}: {differing} bytes differ from Pillow");
    }
}

#[test]
fn tiled_planar_files_match_their_contiguous_twins() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/corpus/pillow-13.0.0/Tests/images");
    assert!(dir.is_dir(), "{} is missing: run `cargo xtask setup` (it fetches Pillow's sdist)", dir.display());
    let load = |name: &str| decode_default(&std::fs::read(dir.join(name)).expect(name)).expect(name);
    let reference = load("tiff_tiled_raw.tif");
    for twin in ["tiff_tiled_planar_raw.tif", "tiff_tiled_planar_lzw.tiff", "tiff_strip_planar_lzw.tiff"] {
        assert!(load(twin) == reference, "{twin}");
    }
    let rgb16 = load("tiff_16bit_RGB.tiff");
    assert!(load("tiff_tiled_planar_16bit_RGB.tiff") == rgb16);
    assert!(load("tiff_strip_planar_16bit_RGB.tiff") == rgb16);
    let rgba16 = load("tiff_16bit_RGBa.tiff");
    assert!(load("tiff_tiled_planar_16bit_RGBa.tiff") == rgba16);
    assert!(load("tiff_strip_planar_16bit_RGBa.tiff") == rgba16);
}

#[test]
fn the_orientation_tag_is_applied() {
    let bytes = read("rgb_orientation_6.tif");
    let raw = decode(&bytes, &DecodeOptions { apply_exif_orientation: false, ..Default::default() }).expect("raw");
    assert_eq!((raw.width(), raw.height()), (21, 13));
    let oriented = decode_default(&bytes).expect("oriented");
    assert_eq!((oriented.width(), oriented.height()), (13, 21));
}

/// A little-endian classic TIFF of one IFD: 8-bit gray `width` x `height`, one strip at
/// `strip_offset` of `strip_len` bytes, plus `extra` entries (tag, type, count, value), which
/// replace the entries of their tags (Pillow reads the first entry of a repeated tag).
fn gray_tiff(width: u32, height: u32, strip_offset: u32, strip_len: u32, extra: &[(u16, u16, u32, u32)]) -> Vec<u8> {
    let mut entries = vec![
        (256u16, 4u16, 1u32, width),
        (257, 4, 1, height),
        (258, 3, 1, 8),
        (259, 3, 1, 1),
        (262, 3, 1, 1),
        (273, 4, 1, strip_offset),
        (277, 3, 1, 1),
        (278, 4, 1, height),
        (279, 4, 1, strip_len),
    ];
    entries.retain(|e| !extra.iter().any(|x| x.0 == e.0));
    entries.extend_from_slice(extra);
    entries.sort_by_key(|e| e.0);
    let mut out = b"II\x2a\x00\x08\x00\x00\x00".to_vec();
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    for (tag, ty, count, value) in entries {
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
        if ty == 3 && count == 1 {
            out.extend_from_slice(&(value as u16).to_le_bytes());
            out.extend_from_slice(&[0, 0]);
        } else {
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
    out.extend_from_slice(&[0; 4]);
    out
}

#[test]
fn a_hand_written_gray_strip_decodes() {
    let mut file = gray_tiff(4, 2, 0, 8, &[]);
    let at = file.len() as u32;
    file = gray_tiff(4, 2, at, 8, &[]);
    file.extend_from_slice(&[0, 10, 20, 30, 40, 50, 60, 255]);
    let image = decode_default(&file).expect("gray");
    assert_eq!(image.data()[..6], [0, 0, 0, 10, 10, 10]);
    assert_eq!(image.data()[21..], [255, 255, 255]);
}

#[test]
fn hostile_files_are_refused_with_typed_errors() {
    // Offsets past the end of the file.
    let file = gray_tiff(4, 2, 0xFFFF_FF00, 8, &[]);
    assert!(matches!(decode_default(&file), Err(Error::Truncated { .. })), "{:?}", decode_default(&file));
    // A strip that ends past the end of the file.
    let mut file = gray_tiff(4, 2, 0, 8, &[]);
    let at = file.len() as u32;
    file = gray_tiff(4, 2, at, 8, &[]);
    file.extend_from_slice(&[1, 2, 3]);
    assert!(matches!(decode_default(&file), Err(Error::Truncated { .. })));
    // Huge dimensions: refused from the header, before any allocation.
    let file = gray_tiff(1 << 20, 1 << 20, 8, 8, &[]);
    assert!(matches!(decode_default(&file), Err(Error::TooManyPixels { .. })));
    let small = Limits { max_pixels: 7 };
    let options = DecodeOptions { limits: small, ..Default::default() };
    assert!(matches!(decode(&gray_tiff(4, 2, 8, 8, &[]), &options), Err(Error::TooManyPixels { .. })));
    // Large but allowed dimensions with no data behind them: refused before the raster exists.
    let result = decode_default(&gray_tiff(10_000, 10_000, 8, 8, &[]));
    assert!(matches!(result, Err(Error::Truncated { .. })), "{result:?}");
    // Zero size.
    assert!(matches!(decode_default(&gray_tiff(0, 2, 8, 8, &[])), Err(Error::ZeroSize { .. })));
    // A huge tile on a tiny image.
    let huge_tile = [(259, 3, 1, 8), (322, 4, 1, 1 << 30), (323, 4, 1, 1 << 30), (324, 4, 1, 8), (325, 4, 1, 8)];
    let result = decode_default(&gray_tiff(4, 2, 8, 8, &huge_tile));
    assert!(matches!(result, Err(Error::Malformed { .. })), "{result:?}");
    // A deflate strip that inflates far past the strip size: decoding stops at the strip.
    let bomb = gray_tiff(4, 2, 0, 8, &[]);
    let mut file = gray_tiff(4, 2, bomb.len() as u32 + 12, 40, &[(259, 3, 1, 8)]);
    file.extend_from_slice(&[0; 12]);
    let mut z = flate_zeros(1 << 20);
    file.append(&mut z);
    let _ = decode_default(&file);
    // An IFD past the end, and the header alone.
    assert!(decode_default(b"II\x2a\x00\xff\xff\x00\x00").is_err());
    assert!(decode_default(b"II\x2a\x00").is_err());
}

/// A stored (uncompressed) zlib stream of `n` zero bytes, good enough to exercise the length cap.
fn flate_zeros(n: usize) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let mut left = n;
    while left > 0 {
        let len = left.min(65535);
        left -= len;
        out.push(u8::from(left == 0));
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&(!(len as u16)).to_le_bytes());
        out.extend(std::iter::repeat_n(0u8, len));
    }
    out.extend_from_slice(&[0, 0, 0, 0]);
    out
}

#[test]
fn truncated_and_corrupted_fixtures_never_panic() {
    let manifest: serde_json::Value =
        serde_json::from_str(&String::from_utf8(read("manifest.json")).expect("utf8")).expect("manifest");
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for case in manifest.as_array().expect("cases") {
        let name = case["image"].as_str().expect("image");
        damage::cuts_and_corruptions_never_panic(name, &read(name), 40, &mut seed);
    }
}
