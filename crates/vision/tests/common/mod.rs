//! Helpers shared by the vision integration tests: the checked-in tiny checkpoints and
//! temporary copies of them.
#![allow(dead_code, reason = "each test file uses a subset")]

use std::path::{Path, PathBuf};
use tensor::Array;
use vision::{EncoderOptions, VisionEncoder};

/// `tests/fixtures/<case>`.
pub fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(case)
}

/// A fixture image path.
pub fn image(case: &str, name: &str) -> PathBuf {
    fixture(case).join("images").join(name)
}

/// A fresh temporary directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vision-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A copy of a fixture's model directory in a temporary directory.
pub fn model_copy(case: &str, name: &str) -> PathBuf {
    let dir = temp_dir(name);
    for entry in std::fs::read_dir(fixture(case).join("model")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    dir
}

pub fn load(dir: &Path) -> VisionEncoder {
    VisionEncoder::load(dir, EncoderOptions::default()).unwrap()
}

/// Row-major bytes of an array (bit-exact comparisons).
pub fn bytes(a: &Array) -> Vec<u8> {
    a.with_bytes(<[u8]>::to_vec).unwrap()
}

/// Rewrites a model directory's weights: `edit` receives the tensors by stored name.
pub fn rewrite_weights(dir: &Path, edit: impl FnOnce(&mut Vec<(String, Array)>)) {
    let path = dir.join("model.safetensors");
    let mut tensors: Vec<(String, Array)> = tensor::load_safetensors(&path).unwrap().into_iter().collect();
    edit(&mut tensors);
    let refs: Vec<(&str, &Array)> = tensors.iter().map(|(n, a)| (n.as_str(), a)).collect();
    tensor::save_safetensors(&path, &refs, None).unwrap();
}
