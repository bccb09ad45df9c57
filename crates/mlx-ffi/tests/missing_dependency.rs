//! A libmlx whose `NEEDED` library is absent (MLX's CUDA build on a machine without the NVIDIA
//! driver) is refused with one error naming that library, and nothing is loaded. Its own
//! process: a refused libmlx stays the process's one libmlx.

extern crate gemma_vision_mlx_ffi as mlx_ffi;

use mlx_ffi::{LIBMLX, LoadError};
use std::process::Command;

/// The `NEEDED` library of the stand-in libmlx: a name no system has.
const ABSENT: &str = "libgemma-vision-absent-dependency.so.1";

#[test]
fn a_libmlx_whose_dependency_is_absent_is_refused_naming_it() {
    let dir = std::env::temp_dir().join(format!("mlx-ffi-test-{}-needs-absent", std::process::id()));
    let stub_dir = dir.join("stub");
    std::fs::create_dir_all(&stub_dir).unwrap();
    // The dependency exists while libmlx is linked against it, then goes away, as the driver's
    // libcuda.so.1 is present where the CUDA wheel was built and absent here.
    let stub_source = stub_dir.join("stub.c");
    std::fs::write(&stub_source, "int gemma_vision_absent_dependency(void) { return 1; }\n").unwrap();
    let stub = stub_dir.join(ABSENT);
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", &format!("-Wl,-soname,{ABSENT}"), "-o"])
        .arg(&stub)
        .arg(&stub_source)
        .status()
        .unwrap();
    assert!(built.success());
    let source = dir.join("version.c");
    std::fs::write(
        &source,
        "int gemma_vision_absent_dependency(void);\n\
         const char* _ZN3mlx4core7versionEv(void) { return gemma_vision_absent_dependency() ? \"0.32.4\" : \"\"; }\n",
    )
    .unwrap();
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-Wl,--no-as-needed", "-o"])
        .arg(dir.join(LIBMLX))
        .arg(&source)
        .arg(&stub)
        .status()
        .unwrap();
    assert!(built.success());
    std::fs::remove_dir_all(&stub_dir).unwrap();

    let error = mlx_ffi::open_from(&dir).unwrap_err();
    match &error {
        LoadError::MissingDependency { path, library, message } => {
            assert_eq!(*path, dir.join(LIBMLX).canonicalize().unwrap());
            assert_eq!(library, ABSENT);
            assert!(message.contains(ABSENT), "{message}");
        }
        other => panic!("expected MissingDependency, got {other:?}"),
    }
    let text = error.to_string();
    assert!(text.contains(&format!("it needs {ABSENT}, which the dynamic linker cannot find")), "{text}");
    assert!(mlx_ffi::loaded().is_none());
}
