//! CIELab TIFFs: Pillow 13's RGB bytes (its `LAB` mode through Little CMS) for the fixtures of
//! `fixtures/tiff/lab/make_lab_fixtures.py` (every compression Pillow writes LAB with, strips,
//! tiles, planar samples, both byte orders, a grid of every L* over 256 a*, b* pairs), Pillow's
//! refusals (ICCLab, ITULab, an extra sample, FillOrder 2) kept, and, when that script's
//! `--exhaustive` files exist, all 256^3 stored values.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, decode};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiff/lab")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fnv1a64(data: &[u8]) -> String {
    let hash = data.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    format!("{hash:016x}")
}

#[test]
fn every_lab_fixture_decodes_to_pillows_bytes_or_is_refused_as_pillow_refuses_it() {
    let manifest: serde_json::Value =
        serde_json::from_slice(&read(&fixtures().join("manifest.json"))).expect("manifest");
    let cases = manifest.as_array().expect("cases");
    assert!(cases.len() >= 15, "{} cases", cases.len());
    for case in cases {
        let name = case["image"].as_str().expect("image");
        let ours = decode(&read(&fixtures().join(name)), &DecodeOptions::default());
        if let Some(error) = case.get("pillow_error") {
            assert!(ours.is_err(), "{name}: read, Pillow refuses it ({error})");
            continue;
        }
        let image = ours.unwrap_or_else(|e| panic!("{name}: {e}"));
        let size = (case["width"].as_u64().expect("w") as u32, case["height"].as_u64().expect("h") as u32);
        assert_eq!((image.width(), image.height()), size, "{name}");
        if let Some(digest) = case.get("rgb_fnv1a64") {
            assert_eq!(fnv1a64(image.data()), digest.as_str().expect("digest"), "{name}");
        } else {
            let want = read(&fixtures().join(format!("{name}.rgb")));
            let differing = image.data().iter().zip(&want).filter(|(a, b)| a != b).count();
            assert_eq!((image.data().len(), differing), (want.len(), 0), "{name}: bytes differ from Pillow");
        }
    }
}

/// All 256^3 stored L*, a*, b* triplets against Pillow (`make_lab_fixtures.py --exhaustive`
/// writes them to `target/lab_exhaustive/`, 96 MiB, so they are not committed).
#[test]
#[ignore = "needs `make_lab_fixtures.py --exhaustive` first"]
fn lab_exhaustive() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/lab_exhaustive");
    let image = decode(&read(&dir.join("lab_all.tif")), &DecodeOptions::default()).expect("decode");
    let want = read(&dir.join("lab_all.rgb"));
    assert_eq!(image.data().len(), want.len());
    let pixels = want.len() / 3;
    let differing = image.data().chunks_exact(3).zip(want.chunks_exact(3)).filter(|(a, b)| a != b).count();
    println!("lab_exhaustive: {pixels} stored triplets, {differing} differ from Pillow");
    assert_eq!(differing, 0);
}
