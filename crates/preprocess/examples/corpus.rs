//! Scratch comparer for Pillow's corpus (temporary, for development): decodes every file of a
//! manifest written by `pillow_ref.py` and prints one line per file, then a summary.
//!
//! `cargo run --release -p preprocess --example corpus -- <images dir> <ref dir> [filter]`

use preprocess::{DecodeOptions, decode};
use serde::Deserialize;
use std::path::PathBuf;

#[derive(Deserialize)]
struct Manifest {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    file: String,
    format: Option<String>,
    mode: Option<String>,
    shape: Option<Vec<usize>>,
    rgb: Option<String>,
    error: Option<String>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let images = PathBuf::from(&args[0]);
    let refs = PathBuf::from(&args[1]);
    let filter = args.get(2).cloned().unwrap_or_default();
    let manifest: Manifest =
        serde_json::from_str(&std::fs::read_to_string(refs.join("manifest.json")).unwrap()).unwrap();
    std::panic::set_hook(Box::new(|_| {}));
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for case in &manifest.cases {
        if !case.file.contains(&filter) {
            continue;
        }
        let bytes = std::fs::read(images.join(&case.file)).unwrap();
        let started = std::time::Instant::now();
        let ours = std::panic::catch_unwind(|| decode(&bytes, &DecodeOptions::default()));
        let ms = started.elapsed().as_millis();
        let fmt = format!("{}/{}", case.format.as_deref().unwrap_or("-"), case.mode.as_deref().unwrap_or("-"));
        let (class, detail) = match (&ours, &case.rgb) {
            (Err(_), _) => ("CRASHED", String::new()),
            (Ok(Ok(img)), Some(rgb)) => {
                let reference = std::fs::read(refs.join(rgb)).unwrap();
                let shape = case.shape.clone().unwrap();
                let ours_shape = vec![img.height() as usize, img.width() as usize, 3];
                if shape != ours_shape {
                    ("DIFFER", format!("shape {shape:?} vs ours {ours_shape:?}"))
                } else {
                    let n = reference.iter().zip(img.data()).filter(|(a, b)| a != b).count();
                    if n == 0 { ("exact", String::new()) } else { ("DIFFER", format!("{n}/{} bytes", reference.len())) }
                }
            }
            (Ok(Err(e)), Some(_)) => ("REFUSED-PILLOW-READS", e.to_string()),
            (Ok(Err(e)), None) => ("refused", format!("{e} | pillow: {}", case.error.as_deref().unwrap_or(""))),
            (Ok(Ok(img)), None) => (
                "READ-PILLOW-REFUSES",
                format!("{}x{} | pillow: {}", img.width(), img.height(), case.error.as_deref().unwrap_or("")),
            ),
        };
        *counts.entry(class).or_default() += 1;
        let detail: String = detail.chars().take(160).collect();
        println!("{class:22} {:45} {fmt:14} {ms:>5}ms {detail}", case.file);
    }
    println!("summary: {counts:?}");
}
