//! Damaged copies of fixture files for the test files that share them: a manifest case's damage
//! applied to its base, and files cut short or overwritten at pseudo-random places, which must
//! decode or be refused, never panic.
#![allow(dead_code, reason = "each test file uses part of this module")]

use preprocess::{DecodeOptions, Error, decode};

/// `base` with a manifest case's damage: cut to `case["cut"]` bytes (unless null), then each
/// `[at, xor]` of `case["flips"]` applied.
pub fn apply(base: &[u8], case: &serde_json::Value) -> Vec<u8> {
    let mut bytes = base.to_vec();
    if let Some(cut) = case["cut"].as_u64() {
        bytes.truncate(cut as usize);
    }
    for flip in case["flips"].as_array().expect("flips") {
        let (at, x) = (flip[0].as_u64().expect("at") as usize, flip[1].as_u64().expect("xor") as u8);
        bytes[at] ^= x;
    }
    bytes
}

/// Decodes `bytes` (the file `name`) cut at four places, then `rounds` copies with 4 bytes
/// overwritten each at places drawn from the xorshift state `seed`; panics if a decode panicked.
pub fn cuts_and_corruptions_never_panic(name: &str, bytes: &[u8], rounds: usize, seed: &mut u64) {
    for cut in [8, bytes.len() / 3, bytes.len() / 2, bytes.len() - 1] {
        let result = decode(&bytes[..cut], &DecodeOptions::default());
        assert!(!matches!(result, Err(Error::DecoderPanic { .. })), "{name} cut at {cut}: {result:?}");
    }
    for _ in 0..rounds {
        let mut corrupt = bytes.to_vec();
        for _ in 0..4 {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            let at = (*seed % corrupt.len() as u64) as usize;
            corrupt[at] = (*seed >> 32) as u8;
        }
        let result = decode(&corrupt, &DecodeOptions::default());
        assert!(!matches!(result, Err(Error::DecoderPanic { .. })), "{name} corrupted: {result:?}");
    }
}
