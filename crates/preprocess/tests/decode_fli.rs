//! FLI/FLC: Pillow's RGB bytes for every fixture it reads and an error for every one it
//! refuses, identification as `Image.open` names the file (FLI, or no format), for the files
//! and damaged copies `fixtures/fli/make_fli.py` writes; the corpus's `fli_oob` files, which
//! Pillow does not identify, are not FLI; hostile inputs never panic.

extern crate gemma_vision_preprocess as preprocess;

mod damage;
mod pillow_answer;

use pillow_answer::{Outcome, compare};
use preprocess::{DecodeOptions, Error, Format, decode};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fli")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_fixture_decodes_as_pillow_decodes_it_or_is_refused() {
    let manifest: serde_json::Value = serde_json::from_slice(&read("manifest.json")).expect("manifest");
    let cases = manifest["cases"].as_array().expect("cases");
    let (mut exact, mut refused, mut failures) = (0, 0, Vec::new());
    for case in cases {
        let name = case["file"].as_str().expect("file");
        let bytes = match case["base"].as_str() {
            Some(base) => damage::apply(&read(base), case),
            None => read(name),
        };
        let sniffed = Format::sniff(&bytes).ok().filter(|f| *f == Format::Fli).map(Format::name);
        if sniffed != case["format"].as_str() {
            failures.push(format!("{name}: identified as {sniffed:?}, Pillow {}", case["format"]));
        }
        let ours = decode(&bytes, &DecodeOptions::default());
        if let (Err(e), Some(_)) = (&ours, sniffed) {
            let named = matches!(e, Error::Malformed { format: "FLI", .. } | Error::Truncated { format: "FLI", .. });
            if !named {
                failures.push(format!("{name}: {e} does not name FLI"));
            }
            // Pillow's message ("buffer overrun when reading image file", "image file is
            // truncated (N bytes not processed)", "too much palette data", ...).
            let pillow = case["pillow"]["error"].as_str().unwrap_or_default();
            let message = pillow.split_once(": ").map_or(pillow, |(_, m)| m);
            if !e.to_string().ends_with(message) {
                failures.push(format!("{name}: {e}, Pillow {pillow}"));
            }
        }
        match compare(name, ours, &case["pillow"]) {
            Outcome::Exact => exact += 1,
            Outcome::Refused => refused += 1,
            Outcome::Failure(why) => failures.push(why),
        }
    }
    println!("fli fixtures: exact {exact}, refused as Pillow refuses {refused}");
    assert!(failures.is_empty(), "{} cases differ from Pillow:\n{}", failures.len(), failures.join("\n"));
    assert!(exact >= 90 && refused >= 80, "exact {exact}, refused {refused}");
}

#[test]
fn pillows_unidentified_fli_oob_files_are_not_fli() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/corpus/pillow-13.0.0/Tests/images/fli_oob");
    let Ok(groups) = std::fs::read_dir(&root) else {
        eprintln!("{} is missing: run `cargo xtask setup`", root.display());
        return;
    };
    let mut files: Vec<PathBuf> = Vec::new();
    let mut pending: Vec<PathBuf> = groups.flatten().map(|e| e.path()).collect();
    while let Some(path) = pending.pop() {
        match std::fs::read_dir(&path) {
            Ok(entries) => pending.extend(entries.flatten().map(|e| e.path())),
            Err(_) => files.push(path),
        }
    }
    let mut checked = 0;
    for path in files {
        // The one file there that Pillow identifies (and refuses with "buffer overrun").
        if path.ends_with("04r/initial.fli") {
            continue;
        }
        let bytes = std::fs::read(&path).expect("fli_oob file");
        let sniffed = Format::sniff(&bytes);
        assert!(!matches!(sniffed, Ok(Format::Fli)), "{}: identified as FLI", path.display());
        checked += 1;
    }
    assert!(checked >= 40, "{checked} files");
}

#[test]
fn cut_and_corrupted_fixtures_never_panic() {
    let mut seed = 0x9E37_79B9_7F4A_7C15;
    for name in ["ss2_first.flc", "lc_first.flc", "brun_pal11.fli", "copy.flc", "black_lc.flc"] {
        damage::cuts_and_corruptions_never_panic(name, &read(name), 400, &mut seed);
    }
}

#[test]
fn huge_sizes_are_refused_before_allocating() {
    let mut bytes = read("copy.flc");
    bytes[8..12].copy_from_slice(&[0xFF; 4]);
    let result = decode(&bytes, &DecodeOptions::default());
    assert!(matches!(result, Err(Error::TooManyPixels { .. })), "{result:?}");
}

#[test]
fn corpus_files_pillow_refuses_are_refused_with_its_message() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/corpus/pillow-13.0.0/Tests/images");
    if !root.is_dir() {
        eprintln!("{} is missing: run `cargo xtask setup`", root.display());
        return;
    }
    let digests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pillow_corpus/digests.json");
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(digests).expect("digests")).expect("json");
    let mut checked = 0;
    for case in manifest["cases"].as_array().expect("cases") {
        let (Some("FLI"), Some(error)) = (case["format"].as_str(), case["error"].as_str()) else { continue };
        let file = case["file"].as_str().expect("file");
        let bytes = std::fs::read(root.join(file)).expect("corpus file");
        let ours = decode(&bytes, &DecodeOptions::default()).expect_err(file).to_string();
        let message = error.split_once(": ").map_or(error, |(_, m)| m);
        assert!(ours.contains("FLI") && ours.ends_with(message), "{file}: {ours}, Pillow {error}");
        checked += 1;
    }
    assert!(checked >= 8, "{checked} files");
}
