//! Decoding: Pillow's RGB bytes for every format and mode in the fixtures, EXIF orientation,
//! and a typed error (never a panic) for every kind of bad input.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, Error, Format, Limits, Orientation, Preprocessor, ProcessorConfig, RgbImage, decode};
use std::path::Path;

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn decode_default(bytes: &[u8]) -> preprocess::Result<RgbImage> {
    decode(bytes, &DecodeOptions::default())
}

#[test]
fn every_fixture_decodes_to_pillows_bytes() {
    let manifest: serde_json::Value =
        serde_json::from_str(&String::from_utf8(read("manifest.json")).expect("utf8")).expect("manifest");
    let cases = manifest["decode"].as_array().expect("decode cases");
    assert!(cases.len() >= 20);
    for case in cases {
        let name = case["image"].as_str().expect("image");
        let image = decode_default(&read(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = read(case["rgb"].as_str().expect("rgb"));
        let size = (case["width"].as_u64().expect("w") as u32, case["height"].as_u64().expect("h") as u32);
        assert_eq!((image.width(), image.height()), size, "{name}");
        let differing = image.data().iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(differing, 0, "{name}: {differing} bytes differ from Pillow");
    }
}

#[test]
fn formats_are_recognised_from_content() {
    assert_eq!(Format::sniff(&read("images/rgb_21x13.png")).expect("png"), Format::Png);
    assert_eq!(Format::sniff(&read("images/rgb_21x13_q90.jpg")).expect("jpeg"), Format::Jpeg);
    assert_eq!(Format::sniff(&read("images/palette_21x13.gif")).expect("gif"), Format::Gif);
    assert_eq!(Format::sniff(&read("images/lossy_21x13.webp")).expect("webp"), Format::Webp);
    assert_eq!(Format::sniff(&read("images/rgb_21x13.bmp")).expect("bmp"), Format::Bmp);
    assert_eq!(Format::sniff(&read("images/rgb_21x13.tif")).expect("tiff"), Format::Tiff);
}

#[test]
fn exif_orientation_is_applied_only_when_asked() {
    let plain = decode_default(&read("images/rgb_21x13_q90.jpg")).expect("plain");
    for (file, orientation) in [
        ("images/exif_orientation_3.jpg", Orientation::Rotate180),
        ("images/exif_orientation_6.jpg", Orientation::Rotate270),
        ("images/exif_orientation_8.jpg", Orientation::Rotate90),
    ] {
        let bytes = read(file);
        let raw = decode(&bytes, &DecodeOptions { apply_exif_orientation: false, ..Default::default() }).expect("raw");
        assert!(raw == plain, "{file}: same pixels as the file without EXIF");
        let oriented = decode_default(&bytes).expect("oriented");
        assert!(oriented == orientation.apply(plain.clone()), "{file}");
    }
}

#[test]
fn transpositions_move_pixels_like_pillow() {
    // 3 wide, 2 high; pixel value = 10 * row + column.
    let image = RgbImage::new(3, 2, [0, 1, 2, 10, 11, 12].iter().flat_map(|&v| [v; 3]).collect()).expect("image");
    let layout = |o: Orientation| {
        let out = o.apply(image.clone());
        (out.width(), out.data().chunks(3).map(|p| p[0]).collect::<Vec<u8>>())
    };
    assert_eq!(layout(Orientation::Normal), (3, vec![0, 1, 2, 10, 11, 12]));
    assert_eq!(layout(Orientation::FlipLeftRight), (3, vec![2, 1, 0, 12, 11, 10]));
    assert_eq!(layout(Orientation::Rotate180), (3, vec![12, 11, 10, 2, 1, 0]));
    assert_eq!(layout(Orientation::FlipTopBottom), (3, vec![10, 11, 12, 0, 1, 2]));
    assert_eq!(layout(Orientation::Transpose), (2, vec![0, 10, 1, 11, 2, 12]));
    assert_eq!(layout(Orientation::Rotate270), (2, vec![10, 0, 11, 1, 12, 2]));
    assert_eq!(layout(Orientation::Transverse), (2, vec![12, 2, 11, 1, 10, 0]));
    assert_eq!(layout(Orientation::Rotate90), (2, vec![2, 12, 1, 11, 0, 10]));
}

/// An EXIF block with IFD0 entries `(tag, type, count, value bytes)`, little-endian.
fn exif(entries: &[(u16, u16, u32, [u8; 4])]) -> Vec<u8> {
    let mut b = b"Exif\0\0II*\0\x08\0\0\0".to_vec();
    b.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    for &(tag, kind, count, value) in entries {
        b.extend_from_slice(&tag.to_le_bytes());
        b.extend_from_slice(&kind.to_le_bytes());
        b.extend_from_slice(&count.to_le_bytes());
        b.extend_from_slice(&value);
    }
    b.extend_from_slice(&[0; 4]);
    b
}

#[test]
fn exif_parsing_follows_pillow() {
    // Each expectation was observed with Pillow 13's getexif()/exif_transpose.
    let short = |v: u8| (0x0112, 3, 1, [v, 0, 0, 0]);
    assert_eq!(Orientation::from_exif(&exif(&[short(6)])), Orientation::Rotate270);
    assert_eq!(Orientation::from_exif(&exif(&[(0x0112, 4, 1, [6, 0, 0, 0])])), Orientation::Rotate270);
    assert_eq!(Orientation::from_exif(&exif(&[(0x0112, 8, 1, [6, 0, 0, 0])])), Orientation::Rotate270);
    // BYTE values are bytes in Pillow, never equal to an int: no transposition.
    assert_eq!(Orientation::from_exif(&exif(&[(0x0112, 1, 1, [6, 0, 0, 0])])), Orientation::Normal);
    // The first entry wins; a count of 0 is no value; 9 is not an orientation.
    assert_eq!(Orientation::from_exif(&exif(&[short(3), short(6)])), Orientation::Rotate180);
    assert_eq!(Orientation::from_exif(&exif(&[(0x0112, 3, 0, [6, 0, 0, 0])])), Orientation::Normal);
    assert_eq!(Orientation::from_exif(&exif(&[short(9)])), Orientation::Normal);
    // Big-endian TIFF header.
    let mm = b"Exif\0\0MM\0*\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0\x06\0\0\0\0\0\0";
    assert_eq!(Orientation::from_exif(mm), Orientation::Rotate270);
    for garbage in [&b""[..], b"Exif\0\0", b"Exif\0\0garbage!!", b"Exif\0\0II*\0", b"Exif\0\0II*\0\xff\0\0\0"] {
        assert_eq!(Orientation::from_exif(garbage), Orientation::Normal);
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    assert!(matches!(decode_default(b""), Err(Error::Empty)));
    assert!(matches!(decode_default(b"definitely not an image"), Err(Error::UnknownFormat { .. })));
    assert!(matches!(decode_default(b"\xFF\xD8\xFF"), Err(Error::Truncated { .. } | Error::Malformed { .. })));
    assert!(matches!(decode_default(b"\x89PNG\r\n\x1a\n"), Err(Error::Truncated { .. } | Error::Malformed { .. })));
    for name in [
        "images/rgb_21x13_q90.jpg",
        "images/rgb_21x13_progressive.jpg",
        "images/rgb_21x13.png",
        "images/palette_21x13.gif",
        "images/lossy_21x13.webp",
        "images/rgb_21x13.bmp",
        "images/rgb_21x13.tif",
    ] {
        let bytes = read(name);
        for cut in [bytes.len() / 3, bytes.len() / 2, bytes.len() - 3] {
            let result = decode_default(&bytes[..cut]);
            // Pillow 13 rejects every one of these cuts except a PNG cut inside its IEND chunk
            // (after all the image data), which it loads.
            if name.ends_with(".png") && cut == bytes.len() - 3 {
                assert!(result.is_ok(), "{name} cut in IEND: {result:?}");
            } else {
                assert!(result.is_err(), "{name} cut at {cut} decoded: {result:?}");
            }
        }
        let mut flipped = bytes.clone();
        for b in flipped.iter_mut().skip(20).step_by(7) {
            *b ^= 0x5a;
        }
        // Corrupted data may still decode (JPEG is forgiving, as in Pillow); it must not panic.
        let _ = decode_default(&flipped);
    }
}

/// A PNG header announcing `w x h` (valid CRC) followed by nothing.
fn png_header(w: u32, h: u32) -> Vec<u8> {
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0d".to_vec();
    png.extend_from_slice(&ihdr);
    png.extend_from_slice(&crc32(&ihdr).to_be_bytes());
    png
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[test]
fn decompression_bombs_are_rejected_from_the_header() {
    assert!(matches!(decode_default(&png_header(100_000, 100_000)), Err(Error::TooManyPixels { .. })));
    assert!(matches!(decode_default(&png_header(0, 5)), Err(Error::ZeroSize { .. } | Error::Malformed { .. })));
    // A JPEG whose SOF claims 65000 x 65000.
    let mut jpeg = read("images/rgb_21x13_q90.jpg");
    let sof = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]).expect("SOF0");
    jpeg[sof + 5..sof + 9].copy_from_slice(&[0xFD, 0xE8, 0xFD, 0xE8]);
    assert!(matches!(decode_default(&jpeg), Err(Error::TooManyPixels { width: 65000, height: 65000, .. })));
    // A GIF whose logical screen is 65535 x 65535.
    let mut gif = read("images/palette_21x13.gif");
    gif[6..10].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
    assert!(matches!(decode_default(&gif), Err(Error::TooManyPixels { .. })));
    // Caller limits apply to every format.
    let tight = DecodeOptions { limits: Limits { max_pixels: 100 }, apply_exif_orientation: true };
    for name in ["images/rgb_21x13_q90.jpg", "images/rgb_21x13.png", "images/lossy_21x13.webp", "images/rgb_21x13.bmp"]
    {
        assert!(matches!(decode(&read(name), &tight), Err(Error::TooManyPixels { pixels: 273, .. })), "{name}");
    }
}

#[test]
fn one_pixel_image_goes_through_the_whole_pipeline() {
    let image = decode_default(&read("images/one_pixel.png")).expect("1x1 decodes");
    assert_eq!((image.width(), image.height()), (1, 1));
    let processor = Preprocessor::new(ProcessorConfig::default()).expect("defaults");
    let pixels = processor.gemma4_image(&image).expect("1x1 resizes");
    assert_eq!((pixels.height, pixels.width, pixels.soft_tokens), (768, 768, 256));
    let unified = processor.gemma4_unified_image(&image).expect("unified");
    assert_eq!((unified.soft_tokens, unified.patches.len), (256, 280));
}
