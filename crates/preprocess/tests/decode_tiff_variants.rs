//! TIFF layouts read by other paths than the common ones, against Pillow 13
//! (`fixtures/tiff/variants/make_variant_fixtures.py`): FillOrder 2 in every mode and compression
//! (Pillow's `OPEN_INFO` key carries the file's FillOrder, so it refuses RGBA, CMYK, LA and YCbCr
//! with it even where libtiff would undo the bit order), chroma-subsampled YCbCr through libtiff's
//! RGBA interface (every subsampling it converts, strips and tiles, a predictor, other tables),
//! planar YCbCr, and uncompressed tiled planar 16-bit samples. Each file decodes to Pillow's
//! RGB bytes (FNV-1a 64 digest) or is refused where Pillow refuses it; nothing panics.

extern crate gemma_vision_preprocess as preprocess;

mod damage;
mod pillow_answer;

use pillow_answer::fnv1a64;
use preprocess::{DecodeOptions, Error, decode};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiff/variants")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn cases() -> Vec<serde_json::Value> {
    let manifest: serde_json::Value = serde_json::from_slice(&read("manifest.json")).expect("manifest");
    manifest.as_array().expect("cases").clone()
}

#[test]
fn every_variant_decodes_to_pillows_bytes_or_is_refused_as_pillow_refuses_it() {
    let cases = cases();
    assert!(cases.len() >= 70, "{} cases", cases.len());
    let (mut exact, mut refused) = (0, 0);
    for case in &cases {
        let name = case["image"].as_str().expect("image");
        let pillow = &case["pillow"];
        let ours = decode(&read(name), &DecodeOptions::default());
        if let Some(error) = pillow.get("error") {
            match ours {
                Err(Error::DecoderPanic { .. }) | Ok(_) => panic!("{name}: {ours:?}, Pillow refuses it ({error})"),
                Err(_) => refused += 1,
            }
            continue;
        }
        let image = ours.unwrap_or_else(|e| panic!("{name}: {e}, Pillow reads it"));
        let want = (pillow["width"].as_u64(), pillow["height"].as_u64(), pillow["fnv1a64"].as_str());
        let got = (Some(u64::from(image.width())), Some(u64::from(image.height())), Some(fnv1a64(image.data())));
        assert_eq!((got.0, got.1, got.2.as_deref()), want, "{name}");
        exact += 1;
    }
    println!("TIFF variants: exact {exact} / refused as Pillow {refused}");
}

#[test]
fn fill_order_2_is_refused_for_the_modes_pillows_table_lacks_whatever_the_compression() {
    for mode in ["rgba", "cmyk", "la", "ycbcr"] {
        for comp in ["raw", "tiff_lzw", "tiff_deflate", "packbits"] {
            let name = format!("fillorder2_{mode}_{comp}.tif");
            let result = decode(&read(&name), &DecodeOptions::default());
            assert!(matches!(result, Err(Error::Unsupported { .. })), "{name}: {result:?}");
        }
    }
}

#[test]
fn subsampled_ycbcr_strips_and_tiles_agree() {
    let load = |name: &str| decode(&read(name), &DecodeOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let one_strip = load("ycbcr_2x2_deflate.tif");
    for twin in ["ycbcr_2x2_lzw.tif", "ycbcr_2x2_lzw_strips4.tif", "ycbcr_2x2_deflate_tiled.tif"] {
        assert!(load(twin) == one_strip, "{twin}");
    }
    assert!(load("ycbcr_default_sub_deflate.tif") == one_strip, "the tag's default is 2x2");
    assert!(load("ycbcr_planar_1x1_deflate.tif") == load("ycbcr_1x1_deflate.tif"));
}

#[test]
fn truncated_and_corrupted_variants_never_panic() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for case in cases() {
        let name = case["image"].as_str().expect("image");
        damage::cuts_and_corruptions_never_panic(name, &read(name), 30, &mut seed);
    }
}
