//! What `decode` makes of every file in a directory, one JSON line per file in name order:
//! `{"file": name, "width": w, "height": h, "fnv1a64": digest of the RGB bytes}`, or `{"file":
//! name, "error": message}`. The digests are the fixture generators' (`pillow_answer.py`), so
//! the lines compare with Pillow's answers for the same files (`cargo xtask emulate` runs this
//! under `qemu-aarch64` against the aarch64 wheels' Pillow).
//!
//! `cargo run --release -p gemma-vision-preprocess --example decode_digests -- <dir>`

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, decode};

fn fnv1a64(data: &[u8]) -> String {
    let hash = data.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    format!("{hash:016x}")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: decode_digests <dir>")?;
    let mut names: Vec<String> = std::fs::read_dir(&dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    names.sort();
    let options = DecodeOptions::default();
    for name in names {
        let bytes = std::fs::read(std::path::Path::new(&dir).join(&name))?;
        let line = match decode(&bytes, &options) {
            Ok(image) => serde_json::json!({
                "file": name, "width": image.width(), "height": image.height(), "fnv1a64": fnv1a64(image.data()),
            }),
            Err(error) => serde_json::json!({ "file": name, "error": error.to_string() }),
        };
        println!("{line}");
    }
    Ok(())
}
