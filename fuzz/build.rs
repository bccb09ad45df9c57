//! Puts libmlx's directory into the rpath of the fuzz binaries (the targets link `tensor`, which
//! links libmlx), as the workspace crates' build scripts do.
fn main() {
    let dir = std::env::var("DEP_MLX_TENSOR_RPATH").unwrap_or_default();
    if !dir.is_empty() {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
