//! Puts libmlx's directory (from mlx-ffi) into the rpath of this crate's test, bench and
//! example binaries, and passes it on to dependents as `DEP_MLX_TENSOR_RPATH`.
fn main() {
    let dir = std::env::var("DEP_MLX_RPATH").unwrap_or_default();
    if !dir.is_empty() {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        println!("cargo:rpath={dir}");
    }
}
