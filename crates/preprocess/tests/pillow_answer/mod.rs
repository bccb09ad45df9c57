//! What a decode gave against what Pillow gave (`fixtures/pillow_answer.py`'s answers: `{"width",
//! "height", "fnv1a64"}` of `load_image`'s RGB bytes, or `{"error"}`), for the test files whose
//! fixture sets record those answers.
#![allow(dead_code, reason = "each test file uses part of this module")]

use preprocess::{Error, RgbImage};

/// FNV-1a 64 of `data`, as `pillow_answer.py` writes it (16 hex digits).
pub fn fnv1a64(data: &[u8]) -> String {
    let hash = data.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3));
    format!("{hash:016x}")
}

/// How one file's decode compares with Pillow's answer.
pub enum Outcome {
    /// Pillow's size and bytes.
    Exact,
    /// Refused, as Pillow refuses it.
    Refused,
    /// Anything else: what differs.
    Failure(String),
}

/// Compares `ours` for the file `name` with `pillow`, Pillow's answer for it. A panic caught by
/// the decoder is a failure whatever Pillow did.
pub fn compare(name: &str, ours: Result<RgbImage, Error>, pillow: &serde_json::Value) -> Outcome {
    match (ours, pillow.get("error")) {
        (Err(e @ Error::DecoderPanic { .. }), _) => Outcome::Failure(format!("{name}: {e}")),
        (Err(_), Some(_)) => Outcome::Refused,
        (Ok(image), Some(error)) => {
            Outcome::Failure(format!("{name}: ours reads {}x{}, Pillow: {error}", image.width(), image.height()))
        }
        (Err(e), None) => Outcome::Failure(format!("{name}: Pillow reads it, ours: {e}")),
        (Ok(image), None) => {
            let want = (pillow["width"].as_u64(), pillow["height"].as_u64(), pillow["fnv1a64"].as_str());
            let digest = fnv1a64(image.data());
            if want == (Some(u64::from(image.width())), Some(u64::from(image.height())), Some(digest.as_str())) {
                Outcome::Exact
            } else {
                Outcome::Failure(format!("{name}: {}x{} {digest}, Pillow {want:?}", image.width(), image.height()))
            }
        }
    }
}
