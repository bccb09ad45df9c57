//! Opening MLX: only the release mlx-c was compiled against, one libmlx per process, a clear
//! error for anything else. One process runs these in order (the opened library is global).

extern crate gemma_vision_mlx_ffi as mlx_ffi;

use mlx_ffi::{BUILD_LIB_DIR, BUILD_VERSION, LIBMLX, LoadError};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory holding a stand-in libmlx whose `mlx::core::version()` returns `version`.
fn fake_libmlx(name: &str, version: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlx-ffi-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("version.c");
    std::fs::write(&source, format!("const char* _ZN3mlx4core7versionEv(void) {{ return \"{version}\"; }}\n")).unwrap();
    let status =
        Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(dir.join(LIBMLX)).arg(&source).status().unwrap();
    assert!(status.success());
    dir
}

#[test]
fn only_the_release_mlx_c_was_built_for_opens_and_a_process_keeps_to_one_libmlx() {
    // Nothing there.
    let empty = std::env::temp_dir().join(format!("mlx-ffi-test-{}-empty", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    match mlx_ffi::open_from(&empty) {
        Err(LoadError::NotFound { path }) => assert_eq!(path, empty.join(LIBMLX)),
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert!(mlx_ffi::loaded().is_none());

    // Another release: refused before any mlx-c code is loaded, naming both versions.
    let old = fake_libmlx("old", "0.32.2");
    let error = mlx_ffi::open_from(&old).unwrap_err();
    assert!(matches!(&error, LoadError::Version { found, .. } if found == "0.32.2"), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("is MLX 0.32.2") && message.contains(&format!("needs MLX {BUILD_VERSION}")), "{message}");
    assert!(mlx_ffi::loaded().is_none());

    // That refused file stays the process's libmlx: the real one is not opened beside it.
    let real = Path::new(BUILD_LIB_DIR);
    match mlx_ffi::open_from(real) {
        Err(LoadError::Conflict { loaded, .. }) => assert_eq!(loaded, old.join(LIBMLX).canonicalize().unwrap()),
        other => panic!("expected Conflict, got {other:?}"),
    }
}
