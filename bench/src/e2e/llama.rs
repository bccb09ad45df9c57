//! The llama.cpp side's tools, each step idempotent (a stamp records what it made, as
//! `cargo xtask setup` does):
//!
//! - llama.cpp's sources: the `vendor/llama.cpp` of PyPI's llama-cpp-python sdist
//!   ([`LLAMA_CPP_PYTHON`]), fetched with `pip download --no-binary :all:` and unpacked into
//!   `.deps/llama-cpp-python-<version>/`;
//! - the build: `bench/llama-mtmd` (our driver `encode_image.cpp` + llama.cpp's mtmd library,
//!   static, CPU backend) configured with cmake into `.deps/llama.cpp-build/` and built there;
//! - the `gguf` package ([`GGUF`]), installed apart into `.deps/gguf-<version>/` (on
//!   PYTHONPATH for the mmproj writer only, so the reference's venv stays as pip installs it);
//! - the GGUF mmproj files of each checkpoint, f32, f16, bf16 and Q8_0 (`mmproj_gguf.py`), rewritten
//!   when the checkpoint or the writer changes.

use super::Model;
use crate::machine::cores;
use project::{Result, cmd, deps, output, python, root, run};
use std::fs;
use std::path::{Path, PathBuf};

/// The llama-cpp-python release whose vendored llama.cpp we build: it has gemma4 vision
/// (`tools/mtmd/models/gemma4v.cpp`, `gemma4uv.cpp`).
pub const LLAMA_CPP_PYTHON: &str = "0.3.36";
/// The `gguf` package the mmproj writer uses (the version of that llama.cpp's gguf-py).
pub const GGUF: &str = "0.19.0";

const STAMP: &str = ".xtask-stamp";

/// The built driver and the gguf package.
#[derive(Debug)]
pub struct Llama {
    build: PathBuf,
    gguf_package: PathBuf,
}

impl Llama {
    /// Fetches, unpacks and builds whatever is missing or out of date.
    pub fn build() -> Result<Llama> {
        let sources = sources()?;
        let build = deps().join("llama.cpp-build");
        let project = root().join("bench/llama-mtmd");
        let cmake_lists = fs::read_to_string(project.join("CMakeLists.txt")).map_err(|e| e.to_string())?;
        let version = format!("llama-cpp-python {LLAMA_CPP_PYTHON}\n{}\n", sources.display());
        let recipe = format!("{version}{cmake_lists}");
        if !stamp_matches(&build, &recipe) {
            // Other sources: start over; only our CMakeLists.txt changed: reconfigure in place.
            if !fs::read_to_string(build.join(STAMP)).is_ok_and(|s| s.starts_with(&version)) {
                let _ = fs::remove_dir_all(&build);
            }
            eprintln!(
                "bench e2e: configuring llama.cpp (llama-cpp-python {LLAMA_CPP_PYTHON}) in .deps/llama.cpp-build"
            );
            fs::create_dir_all(&build).map_err(|e| format!("creating {}: {e}", build.display()))?;
            run(cmd("cmake", &["-S"])
                .arg(&project)
                .arg("-B")
                .arg(&build)
                .arg(format!("-DLLAMA_CPP_DIR={}", sources.display()))
                .arg("-DCMAKE_BUILD_TYPE=Release"))?;
            write_stamp(&build, &recipe)?;
        }
        eprintln!("bench e2e: building llama.cpp's mtmd and encode_image (many minutes on a cold build)");
        run(cmd("cmake", &["--build"]).arg(&build).args([
            "--target",
            "encode_image",
            "--parallel",
            &cores().to_string(),
        ]))?;
        Ok(Llama { build, gguf_package: gguf_package()? })
    }

    /// The driver program (`bench/llama-mtmd/encode_image.cpp`).
    pub fn driver(&self) -> PathBuf {
        self.build.join("encode_image")
    }

    /// The GGUF mmproj of `model` in `dtype` (`f32`, `f16`, `bf16` or `q8_0`, as `mmproj_gguf.py
    /// --dtype` names it) under `dir`, written if missing or stale.
    pub fn mmproj(&self, model: &Model, dtype: &str, dir: &Path) -> Result<PathBuf> {
        let path = dir.join(format!("{}-{dtype}.gguf", model.name));
        let script = root().join("bench/python/mmproj_gguf.py");
        // The checkpoint's own stamp (`bench_e2e.py make`) and the writer's text.
        let recipe = format!(
            "{}\n{}",
            fs::read_to_string(model.dir.join("bench_e2e.stamp")).unwrap_or_default(),
            fs::read_to_string(&script).map_err(|e| format!("{}: {e}", script.display()))?
        );
        let stamp = path.with_extension("gguf.stamp");
        if path.is_file() && fs::read_to_string(&stamp).is_ok_and(|s| s == recipe) {
            return Ok(path);
        }
        eprintln!("bench e2e: writing {}", path.display());
        let mut command = cmd(python(), &[]);
        command.arg(&script).arg("--model").arg(&model.dir).arg("--out").arg(&path).args(["--dtype", dtype]);
        command.env("PYTHONPATH", &self.gguf_package);
        output(command)?;
        fs::write(&stamp, recipe).map_err(|e| format!("writing {}: {e}", stamp.display()))?;
        Ok(path)
    }
}

/// `.deps/llama-cpp-python-<version>/vendor/llama.cpp`, fetched and unpacked if absent.
fn sources() -> Result<PathBuf> {
    let dir = deps().join(format!("llama-cpp-python-{LLAMA_CPP_PYTHON}"));
    let recipe = format!("pip download --no-binary :all: --no-deps llama-cpp-python=={LLAMA_CPP_PYTHON}");
    let llama_cpp = dir.join("vendor/llama.cpp");
    if !stamp_matches(&dir, &recipe) {
        eprintln!("bench e2e: fetching llama-cpp-python {LLAMA_CPP_PYTHON}'s sdist (PyPI) for its llama.cpp sources");
        let download = deps().join("downloads");
        fs::create_dir_all(&download).map_err(|e| format!("creating {}: {e}", download.display()))?;
        let mut pip = cmd(python(), &["-m", "pip", "download", "-q", "--disable-pip-version-check"]);
        pip.args(["--no-binary", ":all:", "--no-deps", &format!("llama-cpp-python=={LLAMA_CPP_PYTHON}"), "-d"]);
        run(pip.arg(&download))?;
        let archive = download.join(format!("llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"));
        let unpack = deps().join("llama-cpp-python.unpack");
        let _ = fs::remove_dir_all(&unpack);
        fs::create_dir_all(&unpack).map_err(|e| e.to_string())?;
        let member = format!("llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp");
        run(cmd("tar", &["-xzf"]).arg(&archive).arg("-C").arg(&unpack).arg(&member))?;
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("vendor")).map_err(|e| e.to_string())?;
        fs::rename(unpack.join(&member), &llama_cpp).map_err(|e| format!("moving llama.cpp into place: {e}"))?;
        // A git submodule's pointer to a repository the sdist does not ship (git warns about it
        // when llama.cpp's cmake asks for the commit).
        let _ = fs::remove_file(llama_cpp.join(".git"));
        let _ = fs::remove_dir_all(&unpack);
        let _ = fs::remove_file(&archive);
        write_stamp(&dir, &recipe)?;
    }
    for model in ["gemma4v.cpp", "gemma4uv.cpp"] {
        if !llama_cpp.join("tools/mtmd/models").join(model).is_file() {
            return Err(format!(
                "llama-cpp-python {LLAMA_CPP_PYTHON}'s llama.cpp has no tools/mtmd/models/{model} (no gemma4 vision)"
            ));
        }
    }
    Ok(llama_cpp)
}

/// `.deps/gguf-<version>`: the gguf package alone (`pip install --no-deps --target`).
fn gguf_package() -> Result<PathBuf> {
    let dir = deps().join(format!("gguf-{GGUF}"));
    let recipe = format!("pip install --no-deps --target gguf=={GGUF}");
    if !stamp_matches(&dir, &recipe) {
        eprintln!("bench e2e: installing the gguf package {GGUF} into .deps/gguf-{GGUF}");
        let _ = fs::remove_dir_all(&dir);
        let mut pip = cmd(python(), &["-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"]);
        run(pip.arg("--target").arg(&dir).arg(format!("gguf=={GGUF}")))?;
        write_stamp(&dir, &recipe)?;
    }
    Ok(dir)
}

fn stamp_matches(dir: &Path, recipe: &str) -> bool {
    fs::read_to_string(dir.join(STAMP)).is_ok_and(|s| s == recipe)
}

fn write_stamp(dir: &Path, recipe: &str) -> Result<()> {
    fs::write(dir.join(STAMP), recipe).map_err(|e| format!("writing {}: {e}", dir.join(STAMP).display()))
}
