//! Compiles mlx-c against MLX's headers, generates its Rust bindings and links libmlx.
//!
//! Inputs (each re-runs this script when it changes):
//! - `MLX_DIR`: an MLX install with `include/mlx/mlx.h` and `lib/libmlx.{so,dylib}`
//!   (default `<workspace>/.deps/mlx`, made by `cargo xtask setup` from the pinned PyPI wheel).
//! - `MLX_C_DIR`: mlx-c sources with `mlx/c/*.cpp` (default `<workspace>/.deps/mlx-c`).
//!
//! No BLAS is linked ahead of libmlx: its float32 matmuls run in the BLAS it was built with
//! (for the PyPI wheel, the bundled reference BLAS), so MLX's own ops give stock bits.
//!
//! Outputs for dependents (`links = "mlx"`): `DEP_MLX_RPATH`, the directory holding libmlx,
//! which crates with test, bench or binary targets put into their rpath.

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    for var in ["MLX_DIR", "MLX_C_DIR"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if let Err(message) = build() {
        println!("cargo::error={message}");
    }
}

fn build() -> Result<(), String> {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let workspace = manifest.join("../..");
    let mlx_dir = location("MLX_DIR", workspace.join(".deps/mlx"))?;
    let mlx_c_dir = location("MLX_C_DIR", workspace.join(".deps/mlx-c"))?;
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();

    let lib_dir = mlx_dir.join("lib");
    let lib_name = if target_os == "macos" { "libmlx.dylib" } else { "libmlx.so" };
    for needed in [mlx_dir.join("include/mlx/mlx.h"), lib_dir.join(lib_name), mlx_c_dir.join("mlx/c/mlx.h")] {
        if !needed.exists() {
            return Err(format!(
                "{} not found: run `cargo xtask setup` (or set MLX_DIR / MLX_C_DIR)",
                needed.display()
            ));
        }
    }
    println!("cargo:rerun-if-changed={}", mlx_c_dir.join("mlx/c").display());
    println!("cargo:rerun-if-changed={}", mlx_dir.join("include/mlx/mlx.h").display());
    println!("cargo:rerun-if-changed={}", lib_dir.join(lib_name).display());

    compile_mlx_c(&manifest, &mlx_dir, &mlx_c_dir)?;
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=dylib=mlx");
    if target_os != "windows" {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib_dir.display());
    }
    println!("cargo:rpath={}", lib_dir.display());
    println!("cargo:rustc-env=MLX_FFI_LIB_DIR={}", lib_dir.display());
    generate_bindings(&mlx_c_dir)
}

/// An input directory from its environment variable or the default, made absolute.
fn location(var: &str, default: PathBuf) -> Result<PathBuf, String> {
    let path = env::var_os(var).map(PathBuf::from).unwrap_or(default);
    path.canonicalize()
        .map_err(|_| format!("{} ({var}) not found: run `cargo xtask setup` (or set {var})", path.display()))
}

fn compile_mlx_c(manifest: &Path, mlx_dir: &Path, mlx_c_dir: &Path) -> Result<(), String> {
    let compat = manifest.join("csrc/format_compat.h");
    println!("cargo:rerun-if-changed={}", compat.display());
    let mut sources: Vec<PathBuf> = std::fs::read_dir(mlx_c_dir.join("mlx/c"))
        .map_err(|e| format!("{}: {e}", mlx_c_dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "cpp"))
        .collect();
    sources.sort();
    cc::Build::new()
        .cpp(true)
        .std("c++20")
        .include(mlx_c_dir)
        .include(mlx_dir.join("include"))
        .flag("-include")
        .flag(compat.to_str().ok_or("non-UTF-8 path")?)
        .warnings(false)
        .files(sources)
        .try_compile("mlxc")
        .map_err(|e| format!("compiling mlx-c failed: {e}"))
}

fn generate_bindings(mlx_c_dir: &Path) -> Result<(), String> {
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    bindgen::Builder::default()
        .header(mlx_c_dir.join("mlx/c/mlx.h").to_string_lossy())
        .clang_arg(format!("-I{}", mlx_c_dir.display()))
        .allowlist_function("_?mlx_.*")
        .allowlist_type("mlx_.*")
        .allowlist_var("mlx_.*")
        .prepend_enum_name(false)
        .generate_comments(false)
        .generate()
        .map_err(|e| format!("bindgen over mlx-c failed (is libclang-dev installed?): {e}"))?
        .write_to_file(out.join("bindings.rs"))
        .map_err(|e| format!("writing bindings: {e}"))
}
