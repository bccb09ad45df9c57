//! The format table (`src/decode/format.rs`) against what derives from it:
//! - every format it says is read decodes a file of Pillow's test images (`.deps/corpus/`, as
//!   `pillow_corpus.rs` finds it) to Pillow's bytes, and every format it says is only
//!   identified is refused by name;
//! - the fuzz crate's decode targets are the formats read: `fuzz/Cargo.toml`'s generated
//!   section is this table's, rewritten here when it is stale (the test then fails, naming it).

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, Error, Format, decode};
use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fnv1a64(data: &[u8]) -> String {
    let hash = data.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    format!("{hash:016x}")
}

/// The cases of `fixtures/pillow_corpus/digests.json` (what Pillow 13 makes of each corpus file).
fn corpus_cases() -> Vec<serde_json::Value> {
    let digests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pillow_corpus/digests.json");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(digests).expect("digests.json")).expect("json");
    manifest["cases"].as_array().expect("cases").clone()
}

#[test]
fn every_format_read_decodes_a_file_of_pillow_s_and_the_others_are_refused_by_name() {
    let images = repository().join(".deps/corpus/pillow-13.0.0/Tests/images");
    assert!(images.is_dir(), "{} is missing: run `cargo xtask setup` (it fetches Pillow's sdist)", images.display());
    let cases = corpus_cases();
    let mut failures = Vec::new();
    for &format in Format::ALL {
        // The files Pillow opens as this format and reads.
        let read_by_pillow =
            cases.iter().filter(|case| case["format"].as_str() == Some(format.name()) && case.get("error").is_none());
        let mut samples = 0;
        let mut decoded = false;
        for case in read_by_pillow {
            let file = case["file"].as_str().expect("file");
            let bytes = std::fs::read(images.join(file)).expect("corpus file");
            assert_eq!(Format::sniff(&bytes).ok(), Some(format), "{file}");
            samples += 1;
            match decode(&bytes, &DecodeOptions::default()) {
                Err(Error::UnsupportedFormat { format: named }) if !format.is_decoded() => {
                    assert_eq!(named, format.name(), "{file}");
                }
                Ok(image) if format.is_decoded() => {
                    let pillow = (case["width"].as_u64(), case["height"].as_u64(), case["fnv1a64"].as_str());
                    let digest = fnv1a64(image.data());
                    let ours = (Some(u64::from(image.width())), Some(u64::from(image.height())), Some(digest.as_str()));
                    // One sample read as Pillow reads it is enough here; `pillow_corpus.rs`
                    // compares every file.
                    if ours == pillow {
                        decoded = true;
                        break;
                    }
                }
                Ok(_) => panic!("{file}: decoded, but {} is not read", format.name()),
                Err(e) if format.is_decoded() => assert!(!matches!(e, Error::UnsupportedFormat { .. }), "{file}: {e}"),
                Err(e) => panic!("{file}: {e}, not refused by name as {}", format.name()),
            }
        }
        if format.is_decoded() && !decoded {
            let name = format.name();
            failures.push(format!(
                "{name}: read, but none of the {samples} files of Pillow's test images that Pillow reads \
                 as {name} decodes to Pillow's bytes (a format read needs a sample there)"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Where the generated section of `fuzz/Cargo.toml` starts and ends.
const BEGIN: &str = "# BEGIN decode targets";
const END: &str = "# END decode targets";

/// The fuzz crate's section for the formats read: each one's seed extensions and its
/// `decode_<format>` target, built from the one source that reads its format from its name.
fn fuzz_targets_section() -> String {
    let read: Vec<(String, Format)> = Format::ALL
        .iter()
        .filter(|f| f.is_decoded())
        .map(|&f| (format!("decode_{}", f.name().to_ascii_lowercase()), f))
        .collect();
    let mut out = format!(
        "{BEGIN}: generated from the format table (crates/preprocess/src/decode/format.rs) by\n\
         # `cargo test -p gemma-vision-preprocess --test format_table`; do not edit. One target per\n\
         # format read, each built from fuzz_targets/decode_format.rs; `cargo xtask fuzz` seeds it\n\
         # with the files of Pillow's test images that carry the format's extensions.\n\
         [package.metadata.decode-seeds]\n"
    );
    for (target, format) in &read {
        let extensions: Vec<String> = format.extensions().iter().map(|e| format!("\"{e}\"")).collect();
        out += &format!("{target} = [{}]\n", extensions.join(", "));
    }
    for (target, _) in &read {
        out += &format!("\n[[bin]]\nname = \"{target}\"\npath = \"fuzz_targets/decode_format.rs\"\n");
        out += "test = false\ndoc = false\nbench = false\n";
    }
    out + END + "\n"
}

#[test]
fn the_fuzz_targets_are_the_formats_read() {
    let manifest_path = repository().join("fuzz/Cargo.toml");
    let manifest = std::fs::read_to_string(&manifest_path).expect("fuzz/Cargo.toml");
    let (Some(begin), Some(end)) = (manifest.find(BEGIN), manifest.find(END)) else {
        panic!("fuzz/Cargo.toml has no `{BEGIN}` ... `{END}` section for the generated decode targets");
    };
    let end = end + manifest[end..].find('\n').map_or(manifest.len() - end, |n| n + 1);
    let want = fuzz_targets_section();
    if manifest[begin..end] != want {
        let updated = format!("{}{want}{}", &manifest[..begin], &manifest[end..]);
        std::fs::write(&manifest_path, updated).expect("writing fuzz/Cargo.toml");
        panic!("fuzz/Cargo.toml's decode targets were not the format table's; now regenerated: review and commit it");
    }
    assert!(repository().join("fuzz/fuzz_targets/decode_format.rs").is_file());
}
