//! BMP (RLE4 with deltas, top-down RLE8, bitfields, 5-5-5), a bare DIB, ICO with PNG and BMP
//! icons, and XMP `tiff:Orientation` in PNG and JPEG: small generated files decode to the RGB
//! bytes Pillow's load path gives them, or are refused where Pillow refuses them
//! (`fixtures/bmp_ico_xmp/make_fixtures.py` made both).

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, decode};
use std::path::Path;

#[test]
fn generated_files_decode_as_pillow_decodes_them() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/bmp_ico_xmp"));
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let manifest: serde_json::Value = serde_json::from_slice(&read("manifest.json")).expect("manifest.json");
    let cases = manifest["cases"].as_array().expect("cases");
    assert!(cases.len() >= 12);
    for case in cases {
        let name = case["image"].as_str().expect("image");
        let ours = decode(&read(name), &DecodeOptions::default());
        if let Some(error) = case.get("error") {
            assert!(ours.is_err(), "{name}: read, Pillow refuses it ({error})");
            continue;
        }
        let image = ours.unwrap_or_else(|e| panic!("{name}: {e}"));
        let size = (case["width"].as_u64().expect("width"), case["height"].as_u64().expect("height"));
        assert_eq!((u64::from(image.width()), u64::from(image.height())), size, "{name}");
        let want = read(case["rgb"].as_str().expect("rgb"));
        assert!(image.data() == want.as_slice(), "{name}: bytes differ from Pillow's");
    }
}
