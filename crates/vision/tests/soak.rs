//! 1,000 encodes leave MLX's active memory at its baseline and the resident set flat. MLX's
//! counters are process-wide, so this file holds one test (its own process).

extern crate gemma_vision_encoder as vision;

mod common;

use common::{budget_of, fixture, image, load};

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()).unwrap_or(0) * 4096
}

#[test]
fn a_thousand_encodes_do_not_leak() {
    let encoder = load(&fixture("tiny-clipped").join("model"));
    let images = [image("tiny-clipped", "noise-20x30.png"), image("tiny-clipped", "gradient-37x23.png")];
    let encode = || {
        let out = encoder.encode_files(&images, budget_of(6)).unwrap();
        out.features.eval().unwrap();
    };
    for _ in 0..50 {
        encode();
    }
    let active = tensor::memory::active_memory().unwrap();
    let rss = resident_bytes();
    for _ in 0..1000 {
        encode();
        assert_eq!(tensor::memory::active_memory().unwrap(), active, "MLX active memory back at its baseline");
    }
    let growth = resident_bytes().saturating_sub(rss);
    assert!(growth < 16 << 20, "resident set grew by {} KiB over 1,000 encodes", growth / 1024);
}
