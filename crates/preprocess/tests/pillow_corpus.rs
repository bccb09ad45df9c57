//! Every file of Pillow's own test images (`Tests/images` of Pillow 13.0.0's sdist, which
//! `cargo xtask setup` unpacks into `.deps/corpus/`) against what mlx-vlm's `load_image` gives
//! on Pillow 13 (`fixtures/pillow_corpus/digests.json`, made by `make_digests.py` there: the
//! format Pillow names, the RGB size and an FNV-1a 64 digest of its bytes, or its error):
//! - a file Pillow reads decodes to the same bytes, unless it is of a format this crate does
//!   not read ([`Error::UnsupportedFormat`] naming Pillow's format) or a known gap of
//!   [`Exceptions`];
//! - a file Pillow refuses is refused, unless [`Exceptions`] lists it as read where Pillow
//!   refuses;
//! - no decoder panics, and every refusal of a file Pillow identifies names its format.
//!
//! The same holds for the fuzz files of Pillow's repository that its sdist leaves out
//! (`fixtures/pillow_repo/`, its `Tests/images/crash-*.tif` at commit 4e5f09f5, with their
//! digests made by the same `make_digests.py`).

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, Error, decode};
use std::path::Path;

/// `fixtures/pillow_corpus/exceptions.json`: the files where ours and Pillow may part, each
/// with its reason (shared with the corpus rows of `cargo xtask parity preprocess`).
struct Exceptions {
    /// Files Pillow reads whose variant ours refuses by name ([`Error::Unsupported`]).
    known_gaps: Vec<String>,
    /// Valid files ours reads that Pillow's build cannot open.
    read_where_pillow_refuses: Vec<String>,
}

impl Exceptions {
    fn load() -> Exceptions {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pillow_corpus/exceptions.json");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("exceptions.json")).expect("json");
        let files = |key: &str| -> Vec<String> {
            let entries = json[key].as_array().unwrap_or_else(|| panic!("{key}"));
            entries
                .iter()
                .map(|e| {
                    assert!(e["reason"].as_str().is_some_and(|r| !r.is_empty()), "{key}: {e} has no reason");
                    e["file"].as_str().expect("file").to_owned()
                })
                .collect()
        };
        Exceptions { known_gaps: files("known_gaps"), read_where_pillow_refuses: files("read_where_pillow_refuses") }
    }
}

fn fnv1a64(data: &[u8]) -> String {
    let hash = data.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    format!("{hash:016x}")
}

/// The format an error names, if it names one.
fn named_format(error: &Error) -> Option<&'static str> {
    match error {
        Error::UnsupportedFormat { format }
        | Error::Unsupported { format, .. }
        | Error::Malformed { format, .. }
        | Error::Truncated { format, .. }
        | Error::DecoderPanic { format, .. } => Some(format),
        _ => None,
    }
}

#[test]
fn every_corpus_file_decodes_as_pillow_decodes_it_or_is_refused_by_name() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../.deps/corpus/pillow-13.0.0/Tests/images"));
    assert!(root.is_dir(), "{} is missing: run `cargo xtask setup` (it fetches Pillow's sdist)", root.display());
    let digests = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pillow_corpus/digests.json");
    check_against_digests("corpus", root, Path::new(digests), 1000);
}

#[test]
fn pillows_repository_fuzz_files_decode_as_pillow_decodes_them_or_are_refused() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pillow_repo"));
    check_against_digests("repository fuzz files", root, &root.join("digests.json"), 10);
}

/// Every file of `digests` (under `root`) against Pillow's answer; prints `label`'s counts.
fn check_against_digests(label: &str, root: &Path, digests: &Path, at_least: usize) {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(digests).expect("digests.json")).expect("json");
    let cases = manifest["cases"].as_array().expect("cases");
    assert!(cases.len() > at_least, "{} cases", cases.len());
    let exceptions = Exceptions::load();
    let (mut exact, mut refused_as_pillow, mut refused_by_name, mut read_where_pillow_refuses) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for case in cases {
        let file = case["file"].as_str().expect("file");
        let pillow_format = case.get("format").and_then(|f| f.as_str());
        let bytes = std::fs::read(root.join(file)).expect("corpus file");
        let ours = decode(&bytes, &DecodeOptions::default());
        if let Err(e @ Error::DecoderPanic { .. }) = &ours {
            failures.push(format!("{file}: {e}"));
            continue;
        }
        if let (Err(e), Some(format)) = (&ours, pillow_format)
            && named_format(e).is_some_and(|ours| !ours.eq_ignore_ascii_case(format))
        {
            failures.push(format!("{file}: Pillow names it {format}, our error says {e}"));
            continue;
        }
        match (&ours, case.get("error")) {
            (Err(_), Some(_)) => refused_as_pillow += 1,
            (Ok(_), Some(_)) if exceptions.read_where_pillow_refuses.iter().any(|f| f == file) => {
                read_where_pillow_refuses += 1;
            }
            (Ok(_), Some(error)) => failures.push(format!("{file}: read, Pillow refuses it ({error})")),
            (Err(Error::UnsupportedFormat { .. }), None) => refused_by_name += 1,
            (Err(Error::Unsupported { .. }), None) if exceptions.known_gaps.iter().any(|gap| gap == file) => {
                refused_by_name += 1;
            }
            (Err(e), None) => failures.push(format!("{file}: refused ({e}), Pillow reads it")),
            (Ok(image), None) => {
                let want = (case["width"].as_u64(), case["height"].as_u64(), case["fnv1a64"].as_str());
                let digest = fnv1a64(image.data());
                if want != (Some(u64::from(image.width())), Some(u64::from(image.height())), Some(digest.as_str())) {
                    failures.push(format!("{file}: {}x{} {digest}, Pillow {want:?}", image.width(), image.height()));
                } else {
                    exact += 1;
                }
            }
        }
    }
    println!(
        "{label}: exact {exact}, refused as Pillow refuses {refused_as_pillow}, refused by name {refused_by_name}, \
         read where Pillow refuses {read_where_pillow_refuses}"
    );
    assert!(failures.is_empty(), "{} files differ from Pillow:\n{}", failures.len(), failures.join("\n"));
}
