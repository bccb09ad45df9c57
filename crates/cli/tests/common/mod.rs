//! Helpers shared by the CLI tests: the vision crate's checked-in tiny checkpoints.
#![allow(dead_code, reason = "each test file uses a subset")]

use std::path::{Path, PathBuf};
use tensor::Array;
use vision::{EncoderOptions, VisionEncoder};

/// `crates/vision/tests/fixtures/<case>`.
pub fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../vision/tests/fixtures").join(case)
}

/// A fixture image path.
pub fn image(case: &str, name: &str) -> PathBuf {
    fixture(case).join("images").join(name)
}

pub use tensor::testing::TestDir;

/// A fresh, empty [`TestDir`] for the test `name`.
pub fn temp_dir(name: &str) -> TestDir {
    TestDir::new(&format!("cli-test-{name}"))
}

pub fn load(dir: &Path) -> VisionEncoder {
    VisionEncoder::load(dir, EncoderOptions::default()).unwrap()
}

/// Row-major bytes of an array (bit-exact comparisons).
pub fn bytes(a: &Array) -> Vec<u8> {
    a.with_bytes(<[u8]>::to_vec).unwrap()
}
