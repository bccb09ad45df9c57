//! Repository hygiene, checked on every `cargo xtask test` (as rust-analyzer's `tidy.rs` does):
//! no build output is tracked, every source file opens with a module doc, no source file is
//! over [`MAX_LINES`] lines unless listed in [`LONG_FILES`], and no text file has trailing
//! whitespace. Reads the files git tracks (`git ls-files`), so untracked scratch is ignored.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The length, in lines, above which a source file must be split (or listed below).
const MAX_LINES: usize = 500;

/// Source files allowed over [`MAX_LINES`], each with its reason.
const LONG_FILES: &[(&str, &str)] =
    &[("crates/preprocess/src/resize/avx2.rs", "SIMD: the two passes of the resize on 32 lanes, kept in one file")];

/// Extensions of files read as text for the whitespace check.
const TEXT: &[&str] =
    &["rs", "py", "pyi", "toml", "md", "txt", "sh", "json", "yml", "yaml", "cpp", "h", "cfg", "gitignore", "in", "out"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives one level below the root").to_path_buf()
}

fn tracked_files() -> Vec<String> {
    let out = Command::new("git").args(["ls-files", "-z"]).current_dir(root()).output().expect("git runs");
    assert!(out.status.success(), "git ls-files: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .expect("paths are UTF-8")
        .split('\0')
        .filter(|p| !p.is_empty() && root().join(p).is_file())
        .map(str::to_owned)
        .collect()
}

fn extension(path: &str) -> &str {
    Path::new(path).extension().and_then(|e| e.to_str()).unwrap_or_else(|| path.rsplit('.').next().unwrap_or(""))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Whether `path` is build output that must never be tracked.
fn is_build_output(path: &str) -> bool {
    let components: Vec<&str> = path.split('/').collect();
    components.iter().any(|c| matches!(*c, "target" | "__pycache__" | ".deps"))
        || [".profraw", ".pyc", ".o", ".so", ".whl"].iter().any(|ext| path.ends_with(ext))
}

#[test]
fn no_build_output_is_tracked() {
    let tracked: Vec<String> = tracked_files().into_iter().filter(|p| is_build_output(p)).collect();
    assert!(
        tracked.is_empty(),
        "build output is tracked (untrack it; .gitignore ignores target/):\n{}",
        tracked.join("\n")
    );
}

#[test]
fn every_source_file_opens_with_a_module_doc() {
    let missing: Vec<String> = tracked_files()
        .into_iter()
        .filter(|p| match extension(p) {
            "rs" => !read(p).starts_with("//!"),
            "py" => {
                let text = read(p);
                let body =
                    text.strip_prefix("#!").map_or(text.as_str(), |rest| rest.split_once('\n').map_or("", |x| x.1));
                !body.starts_with("\"\"\"")
            }
            _ => false,
        })
        .collect();
    assert!(missing.is_empty(), "files without a module doc (`//!` / a docstring) first:\n{}", missing.join("\n"));
}

#[test]
fn no_source_file_is_over_the_length_limit() {
    let long: Vec<String> = tracked_files()
        .into_iter()
        .filter(|p| matches!(extension(p), "rs" | "py"))
        .filter(|p| !LONG_FILES.iter().any(|(allowed, _)| allowed == p))
        .filter_map(|p| {
            let lines = read(&p).lines().count();
            (lines > MAX_LINES).then(|| format!("{p}: {lines} lines"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them, or list them in LONG_FILES with a reason):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_long_files_listed_exist_and_are_long() {
    for (path, reason) in LONG_FILES {
        let lines = read(path).lines().count();
        assert!(lines > MAX_LINES, "{path} ({reason}) has {lines} lines: remove it from LONG_FILES");
    }
}

#[test]
fn no_text_file_has_trailing_whitespace() {
    let mut offending = Vec::new();
    for path in tracked_files().into_iter().filter(|p| TEXT.contains(&extension(p))) {
        let Ok(text) = std::fs::read_to_string(root().join(&path)) else { continue };
        for (i, line) in text.lines().enumerate() {
            if line.ends_with([' ', '\t']) {
                offending.push(format!("{path}:{}", i + 1));
            }
        }
    }
    assert!(offending.is_empty(), "trailing whitespace:\n{}", offending.join("\n"));
}

#[test]
fn build_output_is_recognised() {
    assert!(is_build_output("crates/tensor/target/lead/criterion/x/base/estimates.json"));
    assert!(is_build_output("target/release/gemma-vision"));
    assert!(is_build_output("crates/python/python/gemma_vision/__pycache__/x.cpython-311.pyc"));
    assert!(!is_build_output("crates/preprocess/src/target_size.rs"));
    assert!(!is_build_output("crates/preprocess/tests/target_size.rs"));
}
