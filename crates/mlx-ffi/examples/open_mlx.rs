//! Opens MLX as every crate above this one does ([`library`](mlx_ffi::library): `MLX_DIR/lib`,
//! else the MLX this crate was built against) and prints `MLX <version> at <libmlx>`, or the one
//! error that refused it on standard error with exit status 1. `cargo xtask cuda-build` runs it
//! on MLX's CUDA build.

extern crate gemma_vision_mlx_ffi as mlx_ffi;

use std::process::ExitCode;

fn main() -> ExitCode {
    match mlx_ffi::library() {
        Ok(library) => {
            println!("MLX {} at {}", library.version(), library.libmlx().display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
