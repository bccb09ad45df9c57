//! One test per class of bad image input, through the public `VisionEncoder` API
//! (`encode_files` for files, `prepare` + `encode` for decoded images, `preprocess::decode` for
//! bytes). Each asserts the error kind and that its message names the file, the limit or the
//! value. Files that never end or are longer than any image are typed errors too, read no
//! further than a bound. (Degenerate sizes and budgets: `extreme_sizes.rs`.)
//!
//! The tests of this file run one at a time (`serial`) so that the peak resident set measured
//! around a decompression bomb is this test's alone.

extern crate gemma_vision_encoder as vision;

mod common;

use common::{current_rss_kb, fixture, image, load, peak_rss_kb, reset_peak_rss, serial, temp_dir};
use preprocess::{DecodeOptions, RgbImage};
use std::fs;
use std::path::{Path, PathBuf};
use vision::{EncoderOptions, Error, VisionEncoder};

fn tiny(case: &str) -> VisionEncoder {
    load(&fixture(case).join("model"))
}

/// A JPEG from preprocess's fixtures (21×13, made by its `make_fixtures.py`).
fn jpeg_bytes() -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../preprocess/tests/fixtures/images/rgb_21x13_q90.jpg");
    fs::read(path).unwrap()
}

fn png_bytes() -> Vec<u8> {
    fs::read(image("tiny-clipped", "noise-20x30.png")).unwrap()
}

/// Writes `bytes` to `dir/name` and returns the path.
fn file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, bytes).unwrap();
    path
}

/// The decoding error of an image file passed to `encode_files`: the file error must name
/// `path`, and its message must start with the path.
fn file_error(encoder: &VisionEncoder, path: &Path) -> (preprocess::Error, String) {
    let err = encoder.encode_files(&[path], None).unwrap_err();
    let message = err.to_string();
    assert!(message.starts_with(&path.display().to_string()), "{message}");
    match err {
        Error::Preprocess(preprocess::Error::File { path: named, source }) => {
            assert_eq!(named, path);
            (*source, message)
        }
        other => panic!("{}: expected a file error, got {other:?}", path.display()),
    }
}

fn decode(bytes: &[u8]) -> preprocess::Result<RgbImage> {
    preprocess::decode(bytes, &DecodeOptions::default())
}

#[test]
fn an_empty_file_is_empty_input() {
    let _serial = serial();
    let encoder = tiny("tiny-clipped");
    let dir = temp_dir("bad-empty");
    let path = file(&dir, "empty.png", b"");
    let (source, message) = file_error(&encoder, &path);
    assert!(matches!(source, preprocess::Error::Empty), "{source:?}");
    assert!(message.ends_with("empty input: no image bytes"), "{message}");
    assert!(matches!(decode(b""), Err(preprocess::Error::Empty)));
}

#[test]
fn truncated_jpeg_and_png_are_truncated_errors() {
    let _serial = serial();
    let encoder = tiny("tiny-clipped");
    let dir = temp_dir("bad-truncated");
    for (name, bytes, format) in [("cut.jpg", jpeg_bytes(), "JPEG"), ("cut.png", png_bytes(), "PNG")] {
        let cut = &bytes[..bytes.len() / 2];
        let (source, message) = file_error(&encoder, &file(&dir, name, cut));
        match &source {
            preprocess::Error::Truncated { format: f, .. } => assert_eq!(*f, format),
            other => panic!("{name}: expected a truncated {format}, got {other:?}"),
        }
        assert!(message.contains(&format!("truncated {format} data")), "{message}");
    }
}

#[test]
fn every_cut_of_a_jpeg_or_png_is_truncated() {
    let _serial = serial();
    // From the shortest prefix that still has the signature to one byte short of the file.
    // Pillow loads a PNG cut inside its final IEND chunk (all image data present); so do we.
    for (bytes, format, signature, complete_after) in
        [(jpeg_bytes(), "JPEG", 3, usize::MAX), (png_bytes(), "PNG", 8, png_bytes().len() - 12)]
    {
        for len in signature..bytes.len() {
            match decode(&bytes[..len]) {
                Err(preprocess::Error::Truncated { format: f, .. }) if f == format => {}
                Ok(_) if len >= complete_after => {}
                other => panic!("{format} cut to {len} of {} bytes: {other:?}", bytes.len()),
            }
        }
    }
}

#[test]
fn garbage_bytes_are_an_unknown_format_naming_their_first_bytes() {
    let _serial = serial();
    let encoder = tiny("tiny-clipped");
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let dir = temp_dir("bad-garbage");
    let path = file(&dir, "garbage.jpg", &garbage);
    let (source, message) = file_error(&encoder, &path);
    match &source {
        preprocess::Error::UnknownFormat { magic } => assert_eq!(magic, &garbage[..8]),
        other => panic!("expected an unknown format, got {other:?}"),
    }
    assert!(message.contains("unrecognised image format (first bytes"), "{message}");
    // A PNG signature followed by garbage is a malformed PNG, not a crash.
    let mut fake_png = b"\x89PNG\r\n\x1a\n".to_vec();
    fake_png.extend_from_slice(&garbage);
    let (source, message) = file_error(&encoder, &file(&dir, "fake.png", &fake_png));
    assert!(matches!(source, preprocess::Error::Malformed { format: "PNG", .. }), "{source:?}");
    assert!(message.contains("malformed PNG data"), "{message}");
}

#[test]
fn a_text_file_is_an_unknown_format() {
    let _serial = serial();
    let encoder = tiny("tiny-clipped");
    let text = b"Gemma 4 reads images, not prose.\n";
    let dir = temp_dir("bad-text");
    let path = file(&dir, "notes.png", text);
    let (source, message) = file_error(&encoder, &path);
    assert!(matches!(&source, preprocess::Error::UnknownFormat { magic } if magic == b"Gemma 4 "), "{source:?}");
    assert!(message.contains("[47, 65, 6d, 6d, 61, 20, 34, 20]"), "{message}");
    assert!(matches!(decode(text), Err(preprocess::Error::UnknownFormat { .. })));
}

#[test]
fn a_directory_or_a_missing_file_is_an_io_error_naming_it() {
    let _serial = serial();
    let encoder = tiny("tiny-clipped");
    let dir = temp_dir("bad-directory");
    for (path, kind) in
        [(dir.to_path_buf(), std::io::ErrorKind::IsADirectory), (dir.join("absent.png"), std::io::ErrorKind::NotFound)]
    {
        let err = encoder.encode_files(&[&path], None).unwrap_err();
        assert!(err.to_string().starts_with(&path.display().to_string()), "{err}");
        match err {
            Error::Preprocess(preprocess::Error::Io { path: named, source }) => {
                assert_eq!(named, path);
                assert_eq!(source.kind(), kind);
            }
            other => panic!("{}: expected an I/O error, got {other:?}", path.display()),
        }
    }
    // A bad file among good ones fails the whole call and names the bad one.
    let good = image("tiny-clipped", "noise-20x30.png");
    let err = encoder.encode_files(&[good.as_path(), &*dir], None).unwrap_err();
    assert!(err.to_string().starts_with(&dir.display().to_string()), "{err}");
}

/// A PNG header (valid CRC) announcing `width × height` RGB8, and nothing else.
fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut crc = !0u32;
    for &b in &ihdr {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0d".to_vec();
    png.extend_from_slice(&ihdr);
    png.extend_from_slice(&(!crc).to_be_bytes());
    png
}

/// The fixture JPEG with its SOF0 frame header claiming `width × height`.
fn jpeg_claiming(width: u16, height: u16) -> Vec<u8> {
    let mut jpeg = jpeg_bytes();
    let sof = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]).expect("the fixture is baseline (SOF0)");
    jpeg[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
    jpeg[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
    jpeg
}

#[test]
fn decompression_bomb_headers_are_rejected_before_allocation() {
    let _serial = serial();
    let encoder = tiny("tiny-clipped");
    let dir = temp_dir("bad-bomb");
    let limit = preprocess::Limits::PILLOW_BOMB_PIXELS;
    assert_eq!(limit, 178_956_970);
    // 13 400 × 13 400 = 179 560 000 pixels: just past Pillow's threshold. Decoded it would take
    // 539 MB of RGB; 100 000² would take 30 GB.
    let bombs = [
        ("bomb.png", png_header(100_000, 100_000), 100_000u64, 100_000u64),
        ("bomb.jpg", jpeg_claiming(13_400, 13_400), 13_400, 13_400),
    ];
    let rss_before = current_rss_kb();
    let measured = reset_peak_rss();
    for (name, bytes, width, height) in &bombs {
        let path = file(&dir, name, bytes);
        let (source, message) = file_error(&encoder, &path);
        match source {
            preprocess::Error::TooManyPixels { width: w, height: h, pixels, max_pixels } => {
                assert_eq!((w, h, pixels, max_pixels), (*width, *height, width * height, limit), "{name}");
            }
            other => panic!("{name}: expected too many pixels, got {other:?}"),
        }
        assert!(message.contains(&format!("exceeds the limit of {limit} pixels")), "{message}");
        assert!(matches!(decode(bytes), Err(preprocess::Error::TooManyPixels { .. })));
    }
    if measured {
        let grown = peak_rss_kb().saturating_sub(rss_before);
        assert!(grown < 64 * 1024, "the peak resident set grew by {grown} kB while rejecting bombs");
    }
    // The encoder's own limits apply: a 37×23 image (851 pixels) against a limit of 800.
    let options = EncoderOptions { limits: preprocess::Limits { max_pixels: 800 }, ..EncoderOptions::default() };
    let strict = VisionEncoder::load(fixture("tiny-clipped").join("model"), options).unwrap();
    let (source, message) = file_error(&strict, &image("tiny-clipped", "gradient-37x23.png"));
    assert!(matches!(source, preprocess::Error::TooManyPixels { pixels: 851, max_pixels: 800, .. }), "{source:?}");
    assert!(message.contains("37x23 = 851 pixels exceeds the limit of 800 pixels"), "{message}");
}

#[test]
fn endless_or_oversized_files_are_refused_after_a_bounded_read() {
    let _serial = serial();
    let options = EncoderOptions { limits: preprocess::Limits { max_pixels: 800 }, ..EncoderOptions::default() };
    let encoder = VisionEncoder::load(fixture("tiny-clipped").join("model"), options).unwrap();
    let max_bytes = encoder.options().limits.max_file_bytes();
    assert_eq!(max_bytes, 800 * 8 + (16 << 20));

    // /dev/zero starts like no image: refused from its first bytes, as `Image.open` refuses it.
    let zero = Path::new("/dev/zero");
    let (source, message) = file_error(&encoder, zero);
    assert!(matches!(&source, preprocess::Error::UnknownFormat { magic } if magic == &[0; 8]), "{source:?}");
    assert!(message.starts_with("/dev/zero: unrecognised image format"), "{message}");

    // A (sparse) file that starts like a PNG but is longer than any image within the limit:
    // refused from its size, unread.
    let dir = temp_dir("bad-long");
    let long = file(&dir, "long.png", &png_header(20, 40));
    fs::OpenOptions::new().write(true).open(&long).unwrap().set_len(1 << 40).unwrap();
    let (source, message) = file_error(&encoder, &long);
    assert!(matches!(source, preprocess::Error::TooManyBytes { max_bytes: m, max_pixels: 800 } if m == max_bytes));
    assert!(
        message.ends_with(&format!(
            "more than {max_bytes} bytes: larger than a file holding an image of up to 800 pixels"
        )),
        "{message}"
    );

    // A pipe that never ends (a PNG signature, then zeros for as long as anyone reads): refused
    // after `max_bytes + 1` bytes.
    let fifo = dir.join("endless.png");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo {}", fifo.display());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut pipe = fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            let mut written = pipe.write(&png_header(20, 40)).unwrap() as u64;
            let zeros = vec![0u8; 1 << 16];
            // Ends when the reader closes the pipe (EPIPE; SIGPIPE is ignored in Rust programs).
            while let Ok(n) = pipe.write(&zeros) {
                written += n as u64;
            }
            written
        })
    };
    let (source, _) = file_error(&encoder, &fifo);
    assert!(matches!(source, preprocess::Error::TooManyBytes { max_bytes: m, .. } if m == max_bytes), "{source:?}");
    let written = writer.join().unwrap();
    assert!(written > max_bytes && written < max_bytes + (4 << 20), "the writer got {written} bytes out");
}
