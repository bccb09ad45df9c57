//! The build script's rule for a Python's `mlx` package (`mlx_package.py`, run as `python -c`):
//! the portion of the namespace package that holds `mlx.core`, even when the Python starts in a
//! directory whose own `mlx` folder comes first on its path.

extern crate gemma_vision_mlx_ffi as mlx_ffi;

use std::path::{Path, PathBuf};
use std::process::Command;

const RULE: &str = include_str!("../mlx_package.py");

/// The workspace's Python (`cargo xtask setup`), whose `mlx` package `.deps/mlx` links to: the
/// MLX this crate was built against.
fn workspace_python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/venv/bin/python");
    assert!(python.is_file(), "{} not found: run `cargo xtask setup`", python.display());
    python
}

/// `python -c script` started in `cwd`: its stdout, trimmed.
fn run_in(cwd: &Path, script: &str) -> String {
    let out = Command::new(workspace_python()).args(["-c", script]).current_dir(cwd).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn the_mlx_package_is_the_one_holding_mlx_core_beside_a_stray_mlx_folder() {
    let dir = std::env::temp_dir().join(format!("mlx-ffi-test-{}-stray-mlx", std::process::id()));
    // What MLX's CPU JIT leaves in the temporary directory: a folder named `mlx`, no Python in it.
    std::fs::create_dir_all(dir.join("mlx/lib")).unwrap();
    let stray = dir.join("mlx").canonicalize().unwrap();
    let first_portion = Path::new(&run_in(&dir, "import mlx\nprint(list(mlx.__path__)[0])")).canonicalize().unwrap();
    let found = Path::new(&run_in(&dir, RULE)).canonicalize().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();

    // The stray folder is the namespace package's first portion: the rule must look past it.
    assert_eq!(first_portion, stray);
    let built_against = Path::new(mlx_ffi::BUILD_LIB_DIR).parent().unwrap().canonicalize().unwrap();
    assert_eq!(found, built_against);
}
