//! Animated WebP against Pillow: the first frame on its canvas, as Pillow 13 gets it from
//! libwebp's `WebPAnimDecoder` (`fixtures/webp_anim/`, made by `make_webp_anim.py` there):
//! animations Pillow wrote, animations put together chunk by chunk (a first frame smaller than
//! the canvas at an offset, blend and dispose bits, background colours, padding, unknown
//! chunks, EXIF and XMP orientation) and malformed ones. Every file Pillow reads decodes to
//! Pillow's bytes (compared by FNV-1a 64 digest); every file Pillow refuses is refused.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, Error, Limits, decode};
use std::path::Path;

fn fnv1a64(data: &[u8]) -> String {
    let hash = data.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    format!("{hash:016x}")
}

fn fixtures() -> (std::path::PathBuf, Vec<serde_json::Value>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/webp_anim");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).expect("manifest")).expect("json");
    (dir, manifest["cases"].as_array().expect("cases").clone())
}

#[test]
fn first_frames_are_pillows_bytes_and_pillows_refusals_are_refused() {
    let (dir, cases) = fixtures();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let file = case["file"].as_str().expect("file");
        let bytes = std::fs::read(dir.join(file)).expect("fixture");
        let pillow = &case["pillow"];
        let ours = decode(&bytes, &DecodeOptions::default());
        let row = match (&ours, pillow.get("error")) {
            (Err(e), Some(error)) => format!("refused: {e} (Pillow: {error})"),
            (Ok(image), None) => {
                let digest = fnv1a64(image.data());
                let want = (pillow["width"].as_u64(), pillow["height"].as_u64(), pillow["fnv1a64"].as_str());
                let got = (Some(u64::from(image.width())), Some(u64::from(image.height())), Some(digest.as_str()));
                if want != got {
                    failures.push(format!("{file}: ours {got:?}, Pillow {want:?}"));
                }
                format!("{}x{} {digest}", image.width(), image.height())
            }
            (Err(e), None) => {
                failures.push(format!("{file}: ours refused ({e}), Pillow read it"));
                String::new()
            }
            (Ok(_), Some(error)) => {
                failures.push(format!("{file}: ours read it, Pillow refused ({error})"));
                String::new()
            }
        };
        if let Err(e @ Error::DecoderPanic { .. }) = &ours {
            failures.push(format!("{file}: {e}"));
        }
        println!("{file}: {row}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_first_frame_sits_at_its_offset_on_a_black_canvas() {
    let (dir, _) = fixtures();
    let bytes = std::fs::read(dir.join("offset_vp8l_blend.webp")).expect("fixture");
    let image = decode(&bytes, &DecodeOptions::default()).expect("decode");
    assert_eq!((image.width(), image.height()), (64, 48));
    // The 20x16 frame covers x 10..30, y 8..24; the green ANIM background is never painted.
    let pixel = |x: usize, y: usize| &image.data()[(y * 64 + x) * 3..][..3];
    for (x, y) in [(0, 0), (9, 8), (30, 8), (10, 24), (63, 47)] {
        assert_eq!(pixel(x, y), [0, 0, 0], "({x}, {y})");
    }
    assert_ne!(pixel(29, 23), [0, 0, 0]);
}

#[test]
fn the_canvas_is_checked_against_the_limits_before_any_frame_is_decoded() {
    let (dir, _) = fixtures();
    let bytes = std::fs::read(dir.join("offset_vp8l_blend.webp")).expect("fixture");
    let options = DecodeOptions { limits: Limits { max_pixels: 64 * 48 - 1 }, ..DecodeOptions::default() };
    assert!(matches!(decode(&bytes, &options), Err(Error::TooManyPixels { width: 64, height: 48, .. })));
    let options = DecodeOptions { limits: Limits { max_pixels: 64 * 48 }, ..DecodeOptions::default() };
    assert!(decode(&bytes, &options).is_ok());
}

#[test]
fn malformed_animations_are_refused_by_name() {
    let (dir, _) = fixtures();
    let refusal = |file: &str| decode(&std::fs::read(dir.join(file)).expect("fixture"), &DecodeOptions::default());
    for (file, words) in [
        ("bad_anmf_before_anim.webp", "before ANIM"),
        ("bad_no_frames.webp", "without frames"),
        ("bad_reserved_flag.webp", "flags"),
        ("bad_top_level_image.webp", "outside ANMF"),
        ("bad_frame2_outside.webp", "frame 2"),
        ("bad_alph_after_vp8.webp", "ALPH chunk after"),
        ("bad_vp8l_after_alph.webp", "VP8L chunk after"),
        ("bad_alph_only.webp", "without an image chunk"),
        ("bad_anim_short.webp", "ANIM chunk of 4 bytes"),
        ("bad_anmf_short.webp", "ANMF chunk of 12 bytes"),
        ("bad_trailing_4_bytes.webp", "stray bytes"),
        ("bad_frame1_interframe.webp", "not a key frame"),
        ("bad_frame1_invisible.webp", "invisible"),
        ("bad_frame2_signature.webp", "VP8L signature"),
        ("bad_anmf_overrun.webp", "run past its ANMF"),
    ] {
        match refusal(file) {
            Err(Error::Malformed { format: "WEBP", detail }) => assert!(detail.contains(words), "{file}: {detail}"),
            other => panic!("{file}: {other:?}"),
        }
    }
    assert!(matches!(refusal("bad_truncated.webp"), Err(Error::Truncated { format: "WEBP", .. })));
}
