//! Opening the MLX this crate was built against: its version, its file, every mlx-c function.
#![allow(unsafe_code, reason = "calls one mlx-c function through the table, as the tensor crate does")]

extern crate gemma_vision_mlx_ffi as mlx_ffi;

use std::ffi::CStr;
use std::path::Path;

#[test]
fn the_build_s_mlx_opens_with_its_version_and_serves_mlx_c() {
    let library = mlx_ffi::library().unwrap();
    assert_eq!(library.version().split('.').take(3).collect::<Vec<_>>().join("."), mlx_ffi::BUILD_VERSION);
    assert_eq!(library.libmlx(), Path::new(mlx_ffi::BUILD_LIB_DIR).join(mlx_ffi::LIBMLX).canonicalize().unwrap());
    // A second call, and opening the same directory explicitly, give the same library.
    assert!(std::ptr::eq(library, mlx_ffi::library().unwrap()));
    assert!(std::ptr::eq(library, mlx_ffi::open_from(Path::new(mlx_ffi::BUILD_LIB_DIR)).unwrap()));
    // mlx-c answers through the table: its own view of the version agrees.
    let api = library.api();
    // SAFETY: a new string handle, set by `mlx_version`, read while live, freed once.
    let version = unsafe {
        let mut text = api.mlx_string_new();
        assert_eq!(api.mlx_version(&mut text), 0);
        let version = CStr::from_ptr(api.mlx_string_data(text)).to_string_lossy().into_owned();
        api.mlx_string_free(text);
        version
    };
    assert_eq!(version, library.version());
}
