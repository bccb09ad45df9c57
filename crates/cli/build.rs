//! Puts libmlx's directory into the rpath of this crate's binaries (see tensor's build script).
fn main() {
    let dir = std::env::var("DEP_MLX_TENSOR_RPATH").unwrap_or_default();
    if !dir.is_empty() {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
