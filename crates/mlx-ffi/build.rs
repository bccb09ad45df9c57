//! Builds mlx-c (the C API of MLX) into one shared library, embeds it in this crate, and
//! generates the function table through which the crate calls it.
//!
//! Nothing links against libmlx at build time on the Rust side: the crate opens libmlx and the
//! embedded mlx-c library when the process first needs them (`src/library.rs`), so binaries
//! of any crate that depends on this one run without `LD_LIBRARY_PATH` or an rpath.
//!
//! Inputs (each re-runs this script when it changes):
//! - `MLX_DIR`: an MLX install with `include/mlx/mlx.h` and `lib/libmlx.{so,dylib}` (a Metal
//!   build on macOS, the `mlx-cuda-12` wheel, …). Else `<workspace>/.deps/mlx` when this crate
//!   sits in its workspace (made by `cargo xtask setup`), else the `mlx` package of the Python
//!   the build is for (`$PYO3_PYTHON`, which maturin sets to the interpreter it builds for: in
//!   pip's isolated build environment, the one holding the build requirements), else of the
//!   active Python environment (`$VIRTUAL_ENV`, `$CONDA_PREFIX`, else `python3` on `PATH`), as
//!   `pip install "mlx[cpu]"` installs it.
//! - `MLX_C_DIR`: mlx-c sources with `mlx/c/*.cpp`. Else the sources bundled in the crates.io
//!   package `mlx-sys` (never built or depended on): taken from cargo's registry cache, after
//!   `cargo fetch` brings the package there when it is missing, and checked against its
//!   registry checksum.
//!
//! mlx-c 0.7.0 predates MLX 0.32.4; `csrc/mlx_compat.h`, force-included into every mlx-c
//! translation unit, adapts the one binding whose MLX signature changed (and supplies
//! `std::format` to standard libraries without it). `csrc/mlx_ffi_extras.{h,cpp}` add what
//! mlx-c lacks (an array in a fresh buffer of MLX's allocator), compiled into the same library
//! and bound in the same table.
//!
//! Outputs: `MLX_FFI_LIB_DIR` (the libmlx directory used at build time, the run-time default),
//! `MLX_FFI_VERSION` (the MLX version of the headers, which the run-time libmlx must match)
//! and `MLX_FFI_MLX_C` (the built mlx-c library, embedded by `src/library.rs`).

use sha2::{Digest, Sha256};
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The crates.io package whose sources include mlx-c, and its registry checksum (SHA-256 of
/// the `.crate` archive, as the crates.io index records it).
const MLX_SYS: &str = "mlx-sys";
const MLX_SYS_VERSION: &str = "0.7.0";
const MLX_SYS_SHA256: &str = "da965f83ce211b80f9b681d9bbd6fa625fe6bb2e659ba7bc55dd95eea8d3b028";

fn main() {
    for var in ["MLX_DIR", "MLX_C_DIR", "VIRTUAL_ENV", "CONDA_PREFIX"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    if let Err(message) = build() {
        println!("cargo::error={message}");
    }
}

fn build() -> Result<(), String> {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let macos = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "macos");

    let mlx = Mlx::locate(&manifest, macos)?;
    println!("cargo:rerun-if-changed={}", mlx.dir.join("include/mlx/version.h").display());
    println!("cargo:rerun-if-changed={}", mlx.library.display());
    let version = mlx.version()?;

    let mlx_c = mlx_c_sources(&out)?;
    let compat = manifest.join("csrc/mlx_compat.h");
    let extras = manifest.join("csrc/mlx_ffi_extras");
    for file in [compat.clone(), extras.with_extension("h"), extras.with_extension("cpp")] {
        println!("cargo:rerun-if-changed={}", file.display());
    }

    let library = build_mlx_c(&out, &mlx, &mlx_c, &compat, &extras, macos)?;
    generate_table(&out, &mlx_c, &extras.with_extension("h"))?;

    println!("cargo:rustc-env=MLX_FFI_LIB_DIR={}", mlx.dir.join("lib").display());
    println!("cargo:rustc-env=MLX_FFI_VERSION={version}");
    println!("cargo:rustc-env=MLX_FFI_MLX_C={}", library.display());
    Ok(())
}

/// An MLX install: `include/` and `lib/libmlx.*`.
struct Mlx {
    dir: PathBuf,
    library: PathBuf,
}

impl Mlx {
    /// `MLX_DIR`, else the workspace's `.deps/mlx`, else the active Python environment's `mlx`.
    fn locate(manifest: &Path, macos: bool) -> Result<Mlx, String> {
        let library_name = if macos { "libmlx.dylib" } else { "libmlx.so" };
        let install = |dir: PathBuf| -> Option<Mlx> {
            let dir = dir.canonicalize().ok()?;
            let library = dir.join("lib").join(library_name);
            (dir.join("include/mlx/mlx.h").is_file() && library.is_file()).then_some(Mlx { dir, library })
        };
        if let Some(dir) = env::var_os("MLX_DIR") {
            let dir = PathBuf::from(dir);
            return install(dir.clone())
                .ok_or_else(|| format!("MLX_DIR={} has no include/mlx/mlx.h and lib/{library_name}", dir.display()));
        }
        let workspace_deps = manifest.join("../../.deps/mlx");
        if let Some(mlx) = install(workspace_deps.clone()) {
            return Ok(mlx);
        }
        let mut tried = vec![workspace_deps.display().to_string()];
        for python in python_candidates() {
            match python_mlx_package(&python) {
                Some(dir) => match install(dir.clone()) {
                    Some(mlx) => return Ok(mlx),
                    None => tried.push(format!("{} (from {}: no headers or {library_name})", dir.display(), python)),
                },
                None => tried.push(format!("{python}: no `mlx` package")),
            }
        }
        Err(format!(
            "no MLX install found: set MLX_DIR to one (include/, lib/), or install the PyPI wheels into the \
             active Python environment (`pip install \"mlx[cpu]\"` on Linux, `pip install mlx` on macOS). \
             Looked in: {}",
            tried.join("; ")
        ))
    }

    /// `major.minor.patch` from `include/mlx/version.h`.
    fn version(&self) -> Result<String, String> {
        let path = self.dir.join("include/mlx/version.h");
        let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let number = |name: &str| -> Result<u32, String> {
            text.lines()
                .filter_map(|line| line.trim().strip_prefix("#define "))
                .find_map(|rest| rest.strip_prefix(name)?.trim().parse().ok())
                .ok_or_else(|| format!("{}: no `#define {name}`", path.display()))
        };
        Ok(format!(
            "{}.{}.{}",
            number("MLX_VERSION_MAJOR")?,
            number("MLX_VERSION_MINOR")?,
            number("MLX_VERSION_PATCH")?
        ))
    }
}

/// Python interpreters to ask for the `mlx` package, most specific first.
///
/// `PYO3_PYTHON` is watched only here, where it is read: maturin sets it and `cargo` does not,
/// so watching it always would rebuild mlx-c between the two when `.deps/mlx` or `MLX_DIR`
/// decides anyway.
fn python_candidates() -> Vec<String> {
    println!("cargo:rerun-if-env-changed=PYO3_PYTHON");
    let mut candidates: Vec<String> = env::var("PYO3_PYTHON").into_iter().filter(|p| !p.is_empty()).collect();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = env::var_os(var) {
            let python = Path::new(&prefix).join("bin/python");
            if python.is_file() {
                candidates.push(python.display().to_string());
            }
        }
    }
    candidates.extend(["python3".to_owned(), "python".to_owned()]);
    candidates
}

/// The directory of `python`'s `mlx` package, found without importing MLX: the one holding
/// `mlx.core` (`mlx_package.py`), whatever other `mlx` folders are on that Python's path.
fn python_mlx_package(python: &str) -> Option<PathBuf> {
    let out = Command::new(python).args(["-c", include_str!("mlx_package.py")]).output().ok()?;
    let dir = String::from_utf8(out.stdout).ok()?;
    let dir = dir.trim();
    (out.status.success() && !dir.is_empty()).then(|| PathBuf::from(dir))
}

/// mlx-c's source directory: `MLX_C_DIR`, else unpacked from the registry's `mlx-sys` package.
fn mlx_c_sources(out: &Path) -> Result<PathBuf, String> {
    if let Some(dir) = env::var_os("MLX_C_DIR") {
        let dir = PathBuf::from(dir);
        return if dir.join("mlx/c/mlx.h").is_file() {
            // A tree of the user's can change under the same name; the copy unpacked below
            // cannot (it is named by its archive, and watching it would see its own unpacking).
            println!("cargo:rerun-if-changed={}", dir.join("mlx/c").display());
            dir.canonicalize().map_err(|e| format!("MLX_C_DIR={}: {e}", dir.display()))
        } else {
            Err(format!("MLX_C_DIR={} has no mlx/c/mlx.h", dir.display()))
        };
    }
    let unpacked = out.join("mlx-c");
    let stamp = unpacked.join(".unpacked-from");
    let archive_name = format!("{MLX_SYS}-{MLX_SYS_VERSION}.crate");
    if fs::read_to_string(&stamp).is_ok_and(|s| s == archive_name) {
        return Ok(unpacked);
    }
    let archive = match registry_archive(&archive_name) {
        Some(archive) => archive,
        None => {
            fetch_mlx_sys(out)?;
            registry_archive(&archive_name).ok_or_else(|| {
                format!("`cargo fetch` of {MLX_SYS} {MLX_SYS_VERSION} left no {archive_name} in cargo's registry cache")
            })?
        }
    };
    verify_checksum(&archive)?;
    let staging = out.join("mlx-c.unpack");
    let _ = fs::remove_dir_all(&staging);
    fs::create_dir_all(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    let member = format!("{MLX_SYS}-{MLX_SYS_VERSION}/src/mlx-c");
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&archive)
        .arg("-C")
        .arg(&staging)
        .arg(&member)
        .status()
        .map_err(|e| format!("cannot run tar to unpack {}: {e}", archive.display()))?;
    if !status.success() {
        return Err(format!("tar could not unpack {member} from {} ({status})", archive.display()));
    }
    let _ = fs::remove_dir_all(&unpacked);
    fs::rename(staging.join(&member), &unpacked).map_err(|e| format!("moving mlx-c into place: {e}"))?;
    let _ = fs::remove_dir_all(&staging);
    fs::write(&stamp, &archive_name).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(unpacked)
}

/// `archive` in cargo's registry cache (`$CARGO_HOME/registry/cache/<registry>/`).
fn registry_archive(archive: &str) -> Option<PathBuf> {
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))?;
    fs::read_dir(cargo_home.join("registry/cache"))
        .ok()?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path().join(archive))
        .find(|path| path.is_file())
}

/// Brings `mlx-sys` into cargo's registry cache with `cargo fetch` on a one-dependency
/// manifest: the download goes through cargo's own registry configuration (mirrors, proxies,
/// offline mode), and nothing of the package is built.
fn fetch_mlx_sys(out: &Path) -> Result<(), String> {
    let dir = out.join("fetch-mlx-sys");
    fs::create_dir_all(dir.join("src")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let manifest = format!(
        "[package]\nname = \"fetch-mlx-sys\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\n{MLX_SYS} = {{ version = \"={MLX_SYS_VERSION}\", default-features = false }}\n\n[workspace]\n"
    );
    fs::write(dir.join("Cargo.toml"), manifest).map_err(|e| e.to_string())?;
    fs::write(dir.join("src/lib.rs"), "").map_err(|e| e.to_string())?;
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["fetch", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .map_err(|e| format!("cannot run `cargo fetch` for {MLX_SYS}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`cargo fetch` of {MLX_SYS} {MLX_SYS_VERSION} (for mlx-c's sources) failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn verify_checksum(archive: &Path) -> Result<(), String> {
    let bytes = fs::read(archive).map_err(|e| format!("{}: {e}", archive.display()))?;
    let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    if digest == MLX_SYS_SHA256 {
        Ok(())
    } else {
        Err(format!("{} has SHA-256 {digest}, not the registry's {MLX_SYS_SHA256}", archive.display()))
    }
}

/// Compiles mlx-c's sources, and mlx-ffi's own additions (`extras`: `csrc/mlx_ffi_extras.cpp`),
/// against `mlx`'s headers and links them into one shared library (`libmlx_c.so` / `.dylib`)
/// that needs libmlx. `--no-undefined` makes a header/library
/// mismatch a build error rather than a load-time one.
fn build_mlx_c(
    out: &Path,
    mlx: &Mlx,
    mlx_c: &Path,
    compat: &Path,
    extras: &Path,
    macos: bool,
) -> Result<PathBuf, String> {
    let mut sources: Vec<PathBuf> = fs::read_dir(mlx_c.join("mlx/c"))
        .map_err(|e| format!("{}: {e}", mlx_c.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "cpp"))
        .collect();
    sources.sort();
    sources.push(extras.with_extension("cpp"));
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++20")
        .pic(true)
        .include(mlx_c)
        .include(mlx.dir.join("include"))
        .flag("-include")
        .flag(compat.to_str().ok_or("non-UTF-8 path")?)
        .warnings(false)
        .files(&sources);
    let objects = build.try_compile_intermediates().map_err(|e| format!("compiling mlx-c failed: {e}"))?;

    let library = out.join(if macos { "libmlx_c.dylib" } else { "libmlx_c.so" });
    let mut link = build.try_get_compiler().map_err(|e| e.to_string())?.to_command();
    if macos {
        link.args(["-dynamiclib", "-install_name", "@rpath/libmlx_c.dylib", "-Wl,-undefined,error"]);
    } else {
        link.args(["-shared", "-Wl,-soname,libmlx_c.so", "-Wl,--no-undefined", "-Wl,--as-needed", "-s"]);
    }
    link.arg("-o").arg(&library).args(&objects).arg("-L").arg(mlx.dir.join("lib")).arg("-lmlx");
    let output = link.output().map_err(|e| format!("cannot run the linker for mlx-c: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "linking mlx-c against {} failed: {}",
            mlx.library.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(library)
}

/// bindgen over mlx-c's headers and mlx-ffi's additions (`extras`): their types, and a function
/// table (`MlxC`) filled from the loaded library, every function required.
fn generate_table(out: &Path, mlx_c: &Path, extras: &Path) -> Result<(), String> {
    let mut builder = bindgen::Builder::default();
    if env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "aarch64") {
        // mlx-c's `half.h` declares `__bf16` whenever `__aarch64__` is defined; libclang before
        // 15 parses that type only with the target's bf16 feature on. Parsing only: nothing of
        // the table depends on it, and no code is generated for the target by clang.
        builder = builder.clang_args(["-Xclang", "-target-feature", "-Xclang", "+bf16"]);
    }
    builder
        .header(mlx_c.join("mlx/c/mlx.h").to_string_lossy())
        .header(extras.to_string_lossy())
        .clang_arg(format!("-I{}", mlx_c.display()))
        .allowlist_function("_?mlx_.*")
        .allowlist_type("mlx_.*")
        .allowlist_var("mlx_.*")
        // A global array object, not a function: the table holds functions only (which keeps
        // it `Send + Sync`), and nothing uses it.
        .blocklist_item("mlx_array_empty")
        .prepend_enum_name(false)
        .generate_comments(false)
        .dynamic_library_name("MlxC")
        .dynamic_link_require_all(true)
        .generate()
        .map_err(|e| format!("bindgen over mlx-c failed (is libclang-dev installed?): {e}"))?
        .write_to_file(out.join("bindings.rs"))
        .map_err(|e| format!("writing bindings: {e}"))
}
