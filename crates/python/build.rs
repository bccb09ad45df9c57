//! Where the extension finds libmlx at run time: first `$ORIGIN/../mlx/lib`, the `mlx` package
//! beside `gemma_vision` in an installed environment (the wheel depends on `mlx`), then the
//! directory it was linked against (tensor's build script passes it on).
fn main() {
    println!("cargo:rustc-link-arg-cdylib=-Wl,-rpath,$ORIGIN/../mlx/lib");
    let dir = std::env::var("DEP_MLX_TENSOR_RPATH").unwrap_or_default();
    if !dir.is_empty() {
        println!("cargo:rustc-link-arg-cdylib=-Wl,-rpath,{dir}");
    }
}
