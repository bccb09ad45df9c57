//! PSD files in Lab colour against Pillow: files written byte by byte by `make_psd_lab.py`
//! (`fixtures/psd_lab/`), raw and PackBits, with an extra channel, and some Pillow refuses, each
//! with what mlx-vlm's `load_image` on Pillow 13 made of it (Pillow's `LAB` image through
//! Little CMS to RGB). Every file Pillow reads decodes to Pillow's bytes; every file Pillow
//! refuses is refused; nothing panics.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, Error, decode};
use std::path::Path;

fn fnv1a64(data: &[u8]) -> String {
    let hash = data.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    format!("{hash:016x}")
}

#[test]
fn every_lab_file_gives_pillows_pixels_or_is_refused_as_pillow_refuses_it() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/psd_lab");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).expect("manifest")).expect("json");
    let (mut exact, mut refused, mut failures) = (0, 0, Vec::new());
    for case in manifest["cases"].as_array().expect("cases") {
        let name = case["file"].as_str().expect("file");
        let bytes = std::fs::read(dir.join(name)).expect("fixture");
        let pillow = &case["pillow"];
        match (decode(&bytes, &DecodeOptions::default()), pillow.get("error")) {
            (Err(e @ Error::DecoderPanic { .. }), _) => failures.push(format!("{name}: {e}")),
            (Err(_), Some(_)) => refused += 1,
            (Ok(image), Some(error)) => {
                failures.push(format!("{name}: ours reads {}x{}, Pillow: {error}", image.width(), image.height()))
            }
            (Err(e), None) => failures.push(format!("{name}: Pillow reads it, ours: {e}")),
            (Ok(image), None) => {
                let want = (pillow["width"].as_u64(), pillow["height"].as_u64(), pillow["fnv1a64"].as_str());
                let digest = fnv1a64(image.data());
                if want == (Some(u64::from(image.width())), Some(u64::from(image.height())), Some(digest.as_str())) {
                    exact += 1;
                } else {
                    failures.push(format!("{name}: {}x{} {digest}, Pillow {want:?}", image.width(), image.height()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!((exact, refused), (6, 4));
}
