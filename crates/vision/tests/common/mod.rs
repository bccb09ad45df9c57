//! Helpers shared by the vision integration tests: the checked-in tiny checkpoints and
//! temporary copies of them.
#![allow(dead_code, reason = "each test file uses a subset")]

use preprocess::RgbImage;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use tensor::Array;
use vision::{EncoderOptions, Features, SoftTokenBudget, VisionEncoder};

/// `tests/fixtures/<case>`.
pub fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(case)
}

/// A fixture image path.
pub fn image(case: &str, name: &str) -> PathBuf {
    fixture(case).join("images").join(name)
}

pub use tensor::testing::TestDir;

/// A fresh, empty [`TestDir`] for the test `name`.
pub fn temp_dir(name: &str) -> TestDir {
    TestDir::new(&format!("vision-test-{name}"))
}

/// A copy of a fixture's model directory in a temporary directory.
pub fn model_copy(case: &str, name: &str) -> TestDir {
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

/// Runs the tests of one binary that take it one at a time (so that a peak resident set
/// measured by one is its own).
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Asserts that an encode produced values, all finite.
pub fn assert_finite(features: &Features) {
    let values = features.features.astype(tensor::Dtype::F32).unwrap().to_vec::<f32>().unwrap();
    assert!(!values.is_empty() && values.iter().all(|v| v.is_finite()));
}

/// Peak resident set (kB) since the process started or [`reset_peak_rss`].
pub fn peak_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    field("VmHWM:").unwrap_or(0)
}

/// The resident set now (kB).
pub fn current_rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Resets the peak resident set to the current one (`5` into `/proc/self/clear_refs`); false
/// when the kernel does not allow it.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// `Some` budget of `tokens` soft tokens (positive: a test's constant).
pub fn budget_of(tokens: u32) -> Option<SoftTokenBudget> {
    Some(SoftTokenBudget::new(tokens).expect("a positive budget"))
}

/// Decoded images prepared with the encoder's checked preprocessor for `budget`, encoded.
pub fn encode_images(
    encoder: &VisionEncoder,
    images: &[RgbImage],
    budget: Option<SoftTokenBudget>,
) -> vision::Result<Features> {
    let preprocessor = encoder.preprocessor(budget)?;
    let prepared =
        images.iter().map(|image| encoder.prepare(image, &preprocessor)).collect::<vision::Result<Vec<_>>>()?;
    encoder.encode(&prepared)
}

/// The frames of one video prepared with the encoder's checked video processor for `budget`,
/// encoded.
pub fn encode_video(
    encoder: &VisionEncoder,
    frames: &[RgbImage],
    budget: Option<SoftTokenBudget>,
) -> vision::Result<Features> {
    let video = encoder.video_preprocessor(budget)?;
    encoder.encode(&encoder.prepare_video(frames, &video)?)
}
