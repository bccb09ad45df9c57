//! Damaged files against Pillow: small files Pillow wrote (`fixtures/damaged/`, made by
//! `make_damaged.py` there), each damaged in many ways (bytes XORed in its image data or its
//! checksums), and for every damaged file what mlx-vlm's `load_image` on Pillow 13 made of it.
//! Every file Pillow reads decodes to Pillow's bytes or is refused with a typed error; every
//! file Pillow refuses is refused; nothing panics. `differ` (other pixels, silently) and
//! `read, Pillow refuses` must stay 0.

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, Error, decode};
use std::collections::BTreeMap;
use std::path::Path;

fn fnv1a64(data: &[u8]) -> String {
    let hash = data.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    format!("{hash:016x}")
}

#[derive(Default, Debug)]
struct Counts {
    exact: usize,
    refused_pillow_reads: usize,
    refused_as_pillow: usize,
    differ: Vec<String>,
    read_pillow_refuses: Vec<String>,
}

#[test]
fn damaged_files_give_pillows_pixels_or_a_refusal() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/damaged");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).expect("manifest")).expect("json");
    let cases = manifest["cases"].as_array().expect("cases");
    assert!(cases.len() > 300, "{} cases", cases.len());
    let mut by_kind: BTreeMap<String, Counts> = BTreeMap::new();
    let mut bases: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for case in cases {
        let base = case["base"].as_str().expect("base");
        let original = bases.entry(base.to_owned()).or_insert_with(|| std::fs::read(dir.join(base)).expect("base"));
        let mut bytes = original.clone();
        for flip in case["flips"].as_array().expect("flips") {
            let (at, x) = (flip[0].as_u64().expect("at") as usize, flip[1].as_u64().expect("xor") as u8);
            bytes[at] ^= x;
        }
        let name = format!("{base} ({})", case["damage"].as_str().expect("damage"));
        // The kind: the base's name without its variant (`ccitt_g4`, `png_rgb`, …).
        let kind = base.splitn(3, '_').take(2).collect::<Vec<_>>().join("_");
        let counts = by_kind.entry(kind).or_default();
        let pillow = &case["pillow"];
        let ours = decode(&bytes, &DecodeOptions::default());
        if let Err(e @ Error::DecoderPanic { .. }) = &ours {
            panic!("{name}: {e}");
        }
        match (ours, pillow.get("error")) {
            (Err(_), Some(_)) => counts.refused_as_pillow += 1,
            (Ok(_), Some(error)) => counts.read_pillow_refuses.push(format!("{name}: Pillow: {error}")),
            (Err(_), None) => counts.refused_pillow_reads += 1,
            (Ok(image), None) => {
                let want = (pillow["width"].as_u64(), pillow["height"].as_u64(), pillow["fnv1a64"].as_str());
                let digest = fnv1a64(image.data());
                if want == (Some(u64::from(image.width())), Some(u64::from(image.height())), Some(digest.as_str())) {
                    counts.exact += 1;
                } else {
                    counts.differ.push(format!(
                        "{name}: {}x{} {digest}, Pillow {want:?}",
                        image.width(),
                        image.height()
                    ));
                }
            }
        }
    }
    let mut failures = Vec::new();
    for (kind, c) in &by_kind {
        println!(
            "damaged {kind}: exact {} / refused where Pillow reads {} / refused as Pillow {} / differ {} / read where Pillow refuses {}",
            c.exact,
            c.refused_pillow_reads,
            c.refused_as_pillow,
            c.differ.len(),
            c.read_pillow_refuses.len()
        );
        failures.extend(c.differ.iter().chain(&c.read_pillow_refuses).cloned());
    }
    assert!(failures.is_empty(), "{} damaged files differ from Pillow:\n{}", failures.len(), failures.join("\n"));
}
