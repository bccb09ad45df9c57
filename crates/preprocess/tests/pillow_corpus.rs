//! Pillow's own test images for BMP, DIB, ICO, CUR, XMP orientation, JPEGs with junk in their
//! headers, GIFs without a palette and APNG sequence errors: every file decodes to the bytes
//! Pillow's `load_image` gives (size and FNV-1a 64 digest, from
//! `fixtures/pillow_corpus/make_digests.py`), or is refused where Pillow refuses it.
//!
//! The images come from Pillow's sdist under `.deps/corpus/pillow-13.0.0/Tests/images`; without
//! it the test says so and passes.

use preprocess::{DecodeOptions, decode};
use std::path::Path;

fn fnv1a64(data: &[u8]) -> String {
    let hash = data.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    format!("{hash:016x}")
}

#[test]
fn corpus_files_decode_as_pillow_decodes_them() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../.deps/corpus/pillow-13.0.0/Tests/images"));
    if !root.is_dir() {
        eprintln!("note: {} is missing; Pillow's corpus not checked", root.display());
        return;
    }
    let digests = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pillow_corpus/digests.json");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(digests).expect("digests.json")).expect("json");
    let cases = manifest["cases"].as_array().expect("cases");
    assert!(cases.len() > 100);
    let mut failures = Vec::new();
    for case in cases {
        let file = case["file"].as_str().expect("file");
        let bytes = std::fs::read(root.join(file)).expect("corpus file");
        let ours = decode(&bytes, &DecodeOptions::default());
        match (&ours, case.get("error")) {
            (Err(_), Some(_)) => {}
            (Ok(_), Some(error)) => failures.push(format!("{file}: read, Pillow refuses it ({error})")),
            (Err(e), None) => failures.push(format!("{file}: refused ({e}), Pillow reads it")),
            (Ok(image), None) => {
                let want = (case["width"].as_u64(), case["height"].as_u64(), case["fnv1a64"].as_str());
                let got =
                    (Some(u64::from(image.width())), Some(u64::from(image.height())), Some(fnv1a64(image.data())));
                if (want.0, want.1, want.2) != (got.0, got.1, got.2.as_deref()) {
                    failures.push(format!("{file}: {got:?}, Pillow {want:?}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} files differ from Pillow:\n{}", failures.len(), failures.join("\n"));
}
