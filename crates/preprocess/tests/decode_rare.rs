//! The less common formats (SGI, PCX, DCX, XBM, XPM, SUN, MSP, PSD, XVThumb, IM, FITS, IMT,
//! SPIDER, GBR, PIXAR): Pillow's RGB bytes for every fixture it reads and an error for every one it refuses;
//! identification as Pillow's `Image.open` names the format (including the plugins without an
//! `_accept`: IM, IMT, IPTC, PCD, SPIDER; PCD's files here are its `_open` check's, one cut
//! after the header block that Pillow refuses as truncated and one too short to be PCD, its
//! pixels are `decode_pcd.rs`'s); and hostile inputs. Fixtures and expectations:
//! `fixtures/rare/make_rare.py`.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, Error, Format, Limits, decode, open};
use std::path::{Path, PathBuf};

fn rare() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rare")
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(rare().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn cases() -> Vec<serde_json::Value> {
    let manifest: serde_json::Value = serde_json::from_slice(&read("manifest.json")).expect("manifest");
    manifest["cases"].as_array().expect("cases").clone()
}

/// Pillow's format name for a case, when `Image.open` identifies the file.
fn pillow_format(case: &serde_json::Value) -> Option<&str> {
    case["format"].as_str()
}

#[test]
fn every_fixture_pillow_reads_decodes_to_its_bytes_and_the_others_are_refused() {
    let cases = cases();
    assert!(cases.len() >= 60);
    let mut compared = 0;
    for case in &cases {
        let name = case["image"].as_str().expect("image");
        let result = decode(&read(name), &DecodeOptions::default());
        let decoded = pillow_format(case)
            .is_none_or(|f| Format::sniff(&read(name)).is_ok_and(|s| s.name() == f && s.is_decoded()));
        match case["rgb"].as_str() {
            // Read by Pillow, in a format this crate refuses by name (checked below).
            Some(_) if !decoded => assert!(matches!(result, Err(Error::UnsupportedFormat { .. })), "{name}"),
            Some(rgb) => {
                let image = result.unwrap_or_else(|e| panic!("{name}: {e}"));
                let size = (case["width"].as_u64().expect("w") as u32, case["height"].as_u64().expect("h") as u32);
                assert_eq!((image.width(), image.height()), size, "{name}");
                let want = read(rgb);
                let differing = image.data().iter().zip(&want).filter(|(a, b)| a != b).count();
                assert_eq!(differing, 0, "{name}: {differing} bytes differ from Pillow");
                compared += 1;
            }
            None => {
                let error = result.err().unwrap_or_else(|| panic!("{name}: Pillow refuses it ({})", case["error"]));
                assert!(!matches!(error, Error::DecoderPanic { .. }), "{name}: {error}");
            }
        }
    }
    assert!(compared >= 30, "only {compared} fixtures compared with Pillow's bytes");
}

#[test]
fn every_file_pillow_identifies_gets_its_format_name() {
    for case in cases() {
        let name = case["image"].as_str().expect("image");
        let bytes = read(name);
        match pillow_format(&case) {
            Some(format) => {
                let sniffed = Format::sniff(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(sniffed.name(), format, "{name}");
                if !sniffed.is_decoded() {
                    let error = decode(&bytes, &DecodeOptions::default()).expect_err(name);
                    assert_eq!(error.to_string(), format!("{format} is not supported"), "{name}");
                }
            }
            // Pillow cannot identify these; they must not be named as one of the formats whose
            // `_open` check rejects them. (Where an `_open` raises another error, `Image.open`
            // fails on a file of that format: FITS's ValueError, say.)
            None if case["error"].as_str().is_some_and(|e| !e.starts_with("UnidentifiedImageError")) => {}
            None => {
                if let Ok(format) = Format::sniff(&bytes) {
                    let checked = ["IM", "FITS", "IMT", "IPTC", "PCD", "SPIDER", "GBR", "MSP", "SUN", "XBM"];
                    assert!(!checked.contains(&format.name()), "{name}: named {}", format.name());
                }
            }
        }
    }
}

#[test]
fn open_reads_as_much_as_identification_needs_and_agrees_with_decode() {
    for case in cases() {
        let name = case["image"].as_str().expect("image");
        let path = rare().join(name);
        let from_path = open(&path, &Limits::default());
        let from_bytes = decode(&read(name), &DecodeOptions::default());
        match (from_path, from_bytes) {
            (Ok(a), Ok(b)) => assert!(a == b, "{name}"),
            (Err(Error::File { source, .. }), Err(b)) => assert_eq!(source.to_string(), b.to_string(), "{name}"),
            (a, b) => panic!("{name}: open {a:?} but decode {b:?}"),
        }
    }
}

#[test]
fn headers_are_checked_against_the_limits_before_allocating() {
    let limits = Limits { max_pixels: 100 };
    let options = DecodeOptions { limits, ..Default::default() };
    // A 65535 x 65535 RLE SGI, a 60000 x 60000 PCX, SUN, XBM, IM and FITS with almost no data.
    let mut sgi = vec![0u8; 512];
    sgi[..12].copy_from_slice(&[0x01, 0xDA, 1, 1, 0, 3, 0xFF, 0xFF, 0xFF, 0xFF, 0, 3]);
    let mut pcx = vec![0u8; 128];
    pcx[..12].copy_from_slice(&[10, 5, 1, 8, 0, 0, 0, 0, 0x5F, 0xEA, 0x5F, 0xEA]);
    pcx[65] = 3;
    let mut sun = vec![0x59, 0xA6, 0x6A, 0x95, 0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60, 0, 0, 0, 8];
    sun.extend([0u8; 16]);
    let xbm = b"#define a_width 60000\n#define a_height 60000\nstatic char a_bits[] = {\n0x01\n".to_vec();
    let im = b"Image type: RGB image\nImage size (x*y): 60000*60000\n\x1a\x01".to_vec();
    let card = |text: &str| format!("{text:<80}");
    let mut fits =
        ["SIMPLE  = T", "BITPIX  = 8", "NAXIS   = 2", "NAXIS1  = 60000", "NAXIS2  = 60000", "END"].map(card).concat();
    fits.push_str(&" ".repeat(2880 - fits.len() + 80));
    for bytes in [sgi, pcx, sun, xbm, im, fits.into_bytes()] {
        match decode(&bytes, &options) {
            Err(Error::TooManyPixels { max_pixels: 100, .. }) => {}
            other => panic!("{:?}: {other:?}", Format::sniff(&bytes)),
        }
    }
}

#[test]
fn hostile_inputs_are_errors_not_panics() {
    let options = DecodeOptions::default();
    let mut inputs: Vec<Vec<u8>> = vec![
        // SGI RLE with tables pointing anywhere, zero-length rows, 16-bit runs past the end.
        [&[0x01, 0xDA, 1, 2, 0, 3, 0, 4, 0, 2, 0, 3][..], &[0; 500], &[0xFF; 48], &[0x81, 0x80]].concat(),
        [&[0x01, 0xDA, 1, 1, 0, 2, 0, 9, 0, 1, 0, 1][..], &[0; 500], &[0, 0, 2, 8, 0, 0, 0, 0]].concat(),
        // PCX with a width of one and a huge stride, and with every byte a run.
        [&[10, 5, 1, 8, 0, 0, 0, 0, 0, 0, 3, 0][..], &[0; 53], &[1, 0xFF, 0xFF], &[0; 60], &[0xFF; 64]].concat(),
        // XPM with zero characters per pixel, and a header line of empty numbers.
        b"/* XPM */\n\"1 1 1 0\",\n\"a c #000000\",\n\"a\"\n".to_vec(),
        b"/* XPM */\n\"   \",\n".to_vec(),
        // SUN RLE that is nothing but escape bytes; MSP LinS with row lengths past the end.
        [
            &[0x59, 0xA6, 0x6A, 0x95, 0, 0, 0, 9, 0, 0, 0, 9, 0, 0, 0, 8][..],
            &[0, 0, 0, 0, 0, 0, 0, 2],
            &[0; 8],
            &[0x80; 7],
        ]
        .concat(),
    ];
    let mut msp = b"LinS".to_vec();
    msp.extend([9, 0, 9, 0]);
    msp.extend([0u8; 22]);
    let check = msp.chunks_exact(2).fold(0u16, |a, w| a ^ u16::from_le_bytes([w[0], w[1]]));
    msp.extend(check.to_le_bytes());
    msp.extend([0xFF, 0xFF, 0, 0]);
    inputs.push(msp);
    // Text that keeps the IM and IMT header checks reading, then stops.
    inputs.push(b"Image size (x*y): 2*2\nComment: x\n".repeat(200));
    inputs.push(b"width 2\nheight 2\n".repeat(300));
    for (i, bytes) in inputs.iter().enumerate() {
        for cut in [bytes.len(), bytes.len() / 2, 40, 12] {
            let bytes = &bytes[..cut.min(bytes.len())];
            if let Ok(image) = decode(bytes, &options) {
                assert!(image.width() > 0 && image.height() > 0, "input {i} cut at {cut}");
            }
        }
    }
}

#[test]
fn an_endless_run_of_zeros_is_refused_after_a_bounded_read() {
    if !Path::new("/dev/zero").exists() {
        eprintln!("no /dev/zero here; skipped");
        return;
    }
    match open("/dev/zero", &Limits::default()) {
        Err(Error::File { source, .. }) => assert!(matches!(*source, Error::UnknownFormat { .. }), "{source}"),
        other => panic!("{other:?}"),
    }
}
