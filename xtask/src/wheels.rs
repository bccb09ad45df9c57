//! The Python package as its users install it, the last steps of `cargo xtask test`:
//!
//! - **binary wheels**: each installed as `pip install <wheel> mlx-vlm==0.7.10 "mlx[cpu]"`
//!   into a fresh virtual environment whose `PATH` has no build tool on it (no directory holding
//!   one of [`BUILD_TOOLS`]), then `crates/python/tests/wheel_smoke.py` run there (an encode from
//!   NumPy, `accelerate` on mlx-vlm's model, the stock bits): the `cp310` wheel (built for 3.10's
//!   full API) on CPython 3.10, and the `abi3` wheel the pytest step built on the newest CPython
//!   of [`NEWEST`] found (every one of them has mlx 0.32.4 wheels);
//! - **the aarch64 wheel** (`aarch64_wheel.rs`): the `abi3` wheel cross-built for aarch64 Linux
//!   as `cargo xtask emulate` builds, installed by pip under `qemu-aarch64` beside the aarch64
//!   reference with no build tool, and the same smoke script run there;
//! - **the source install**: `pip install ./crates/python` (pip's isolated build, as the README
//!   says) on CPython 3.10, from a fresh `git clone` of `HEAD` (so no `.deps/` beside it), then
//!   one encode of a test checkpoint.
//!
//! The interpreters are `python3.X` of pyenv's versions (`$PYENV_ROOT`, else `~/.pyenv`), else on
//! `PATH`. Each binary check resolves against the index as a user's pip does (`pip download`,
//! under the same `PATH`), then installs those files alone (`--no-index`); every file is kept in
//! `.deps/wheels` and not fetched again, and the source install finds them there too
//! (`PIP_FIND_LINKS`). The environments and the clone live under the target directory and are
//! removed after each check.

use project::{Result, cmd, deps, output, python, root, run, target_dir};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What must not be on the `PATH` a binary wheel installs under.
const BUILD_TOOLS: &[&str] = &["cargo", "rustc", "clang", "cmake", "cc", "gcc"];
/// The oldest CPython mlx-vlm 0.7.10 supports (`Requires-Python: >=3.10`).
const OLDEST: &str = "3.10";
/// The newest CPythons mlx 0.32.4 and mlx-cpu 0.32.4 have wheels for, newest first: the first
/// one found is tested.
const NEWEST: &[&str] = &["3.14", "3.13", "3.12"];
/// What the wheels are installed beside, as a user types it.
const BESIDE: &[&str] = &["mlx-vlm==0.7.10", "mlx[cpu]"];

/// `cargo xtask wheels`: the steps of `cargo xtask test` this module holds, alone, after
/// building the `abi3` wheel; `cargo xtask wheels --aarch64`: the aarch64 wheel's step alone.
pub fn main(args: &[String]) -> Result<()> {
    crate::setup::main()?;
    match args {
        [] => {}
        [flag] if flag == "--aarch64" => return crate::aarch64_wheel::main(),
        _ => return Err(format!("unknown arguments {args:?}: `cargo xtask wheels [--aarch64]`")),
    }
    let abi3 = build(&python(), &target_dir().join("python-wheels"))?;
    binary(&abi3)?;
    source_install()
}

/// The wheel of the `gemma-vision` package for `interpreter`, built by maturin in the dev
/// profile (which reuses what `cargo test` built) into `out` (emptied first): `cp311-abi3` on
/// CPython ≥ 3.11, `cp310-cp310` on 3.10 (the `abi3` feature is pyproject.toml's choice).
pub fn build(interpreter: &Path, out: &Path) -> Result<PathBuf> {
    let _ = fs::remove_dir_all(out);
    let started = Instant::now();
    let mut build = cmd(python(), &["-m", "maturin", "build", "--manifest-path", "crates/python/Cargo.toml"]);
    run(build.arg("--interpreter").arg(interpreter).arg("--out").arg(out))?;
    let wheel = built_wheel(out)?;
    eprintln!("wheels: {} built in {:.0} s", describe(&wheel), started.elapsed().as_secs_f64());
    Ok(wheel)
}

/// The one wheel maturin wrote into `dir`.
pub fn built_wheel(dir: &Path) -> Result<PathBuf> {
    let mut wheels: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .collect();
    match (wheels.pop(), wheels.is_empty()) {
        (Some(wheel), true) => Ok(wheel),
        _ => Err(format!("expected one wheel in {}", dir.display())),
    }
}

/// Builds the `cp310` wheel, then installs and runs each wheel on its CPython (`abi3`: the
/// `cp311-abi3` wheel); then the aarch64 wheel, built and run under emulation
/// (`aarch64_wheel.rs`).
pub fn binary(abi3: &Path) -> Result<()> {
    let oldest = interpreter(OLDEST)?;
    let newest = NEWEST
        .iter()
        .find_map(|version| interpreter(version).ok())
        .ok_or_else(|| format!("no CPython {} found (pyenv or PATH)", NEWEST.join(", ")))?;
    let cp310 = build(&oldest, &target_dir().join("python-wheels-cp310"))?;
    smoke(&oldest, &cp310)?;
    smoke(&newest, abi3)?;
    crate::aarch64_wheel::main()
}

/// A fresh environment of `interpreter`, `wheel` installed beside mlx-vlm with no build tool on
/// `PATH`, and the smoke script run in it.
fn smoke(interpreter: &Path, wheel: &Path) -> Result<()> {
    let venv = target_dir().join("wheel-smoke-venv");
    let result = smoke_in(&venv, interpreter, wheel);
    let _ = fs::remove_dir_all(&venv);
    result
}

fn smoke_in(venv: &Path, interpreter: &Path, wheel: &Path) -> Result<()> {
    let _ = fs::remove_dir_all(venv);
    run(cmd(interpreter, &["-m", "venv"]).arg(venv))?;
    let path = path_without_build_tools(venv)?;
    let venv_python = venv.join("bin/python");
    let in_venv = |args: &[&str]| {
        let mut command = cmd(&venv_python, args);
        command.env("PATH", &path).env("VIRTUAL_ENV", venv).env_remove("PYTHONPATH");
        command
    };
    let house = wheelhouse()?;
    let started = Instant::now();
    let mut download = in_venv(&["-m", "pip", "download", "-q", "--disable-pip-version-check", "--find-links"]);
    run(download.arg(&house).arg("--dest").arg(&house).arg(wheel).args(BESIDE))?;
    forget_our_wheels(&house)?;
    let resolved = started.elapsed().as_secs_f64();
    let mut install =
        in_venv(&["-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index", "--find-links"]);
    run(install.arg(&house).arg(wheel).args(BESIDE))?;
    let installed = started.elapsed().as_secs_f64();
    run(in_venv(&[]).arg(root().join("crates/python/tests/wheel_smoke.py")))?;
    eprintln!(
        "wheels: {} on {}, no build tool on PATH: resolved in {resolved:.0} s, installed in {:.0} s, smoke test {:.0} s",
        describe(wheel),
        interpreter.display(),
        installed - resolved,
        started.elapsed().as_secs_f64() - installed
    );
    Ok(())
}

/// `pip install ./crates/python` from a fresh clone of `HEAD` into a fresh environment of
/// CPython 3.10, then one encode. pip builds in release unless told otherwise: the build is
/// told the dev profile (`MATURIN_PEP517_ARGS`) and a target directory of its own, kept between
/// runs (`target/source-install-target`: the workspace's own would be rebuilt after it, since
/// the clone's crates get the workspace's artifact names); the clone, and with it mlx-ffi's
/// build script finding MLX, is new every time.
pub fn source_install() -> Result<()> {
    let interpreter = interpreter(OLDEST)?;
    let scratch = target_dir().join("source-install");
    let result = source_install_in(&scratch, &interpreter);
    let _ = fs::remove_dir_all(&scratch);
    result
}

fn source_install_in(scratch: &Path, interpreter: &Path) -> Result<()> {
    let _ = fs::remove_dir_all(scratch);
    let clone = scratch.join("clone");
    let head = output(cmd("git", &["rev-parse", "HEAD"]))?;
    run(cmd("git", &["clone", "-q", "--no-checkout"]).arg(root()).arg(&clone))?;
    run(cmd("git", &["checkout", "-q", "--detach", &head]).current_dir(&clone))?;
    let venv = scratch.join("venv");
    run(cmd(interpreter, &["-m", "venv"]).arg(&venv))?;
    let venv_python = venv.join("bin/python");
    let started = Instant::now();
    let mut install =
        cmd(&venv_python, &["-m", "pip", "install", "-q", "--disable-pip-version-check", "./crates/python"]);
    install
        .current_dir(&clone)
        .env("VIRTUAL_ENV", &venv)
        .env("PIP_FIND_LINKS", wheelhouse()?)
        .env("MATURIN_PEP517_ARGS", "--profile dev")
        .env("CARGO_TARGET_DIR", target_dir().join("source-install-target"))
        .env_remove("MLX_DIR")
        .env_remove("PYO3_PYTHON");
    run(install)?;
    let installed = started.elapsed().as_secs_f64();
    let model = clone.join("crates/vision/tests/fixtures/tiny-clipped/model");
    let image = clone.join("crates/vision/tests/fixtures/tiny-clipped/images/noise-20x30.png");
    let script = format!(
        "import gemma_vision\n[f] = gemma_vision.Encoder({model:?}).encode([{image:?}])\n\
         assert f.ndim == 2 and f.shape[0] > 0, f.shape\nprint('source install:', gemma_vision.__file__, f.shape, f.dtype)"
    );
    run(cmd(&venv_python, &["-c", &script]).current_dir(scratch))?;
    eprintln!(
        "wheels: `pip install ./crates/python` from a fresh clone on {} in {installed:.0} s",
        interpreter.display()
    );
    Ok(())
}

/// `python3.X`: the newest pyenv version of it, else the one on `PATH`.
fn interpreter(version: &str) -> Result<PathBuf> {
    let program = format!("python{version}");
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pyenv")));
    let mut pyenv_versions: Vec<PathBuf> = pyenv
        .and_then(|root| fs::read_dir(root.join("versions")).ok())
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&format!("{version}.")))
        .map(|entry| entry.path().join("bin").join(&program))
        .filter(|path| path.is_file())
        .collect();
    pyenv_versions.sort_by_key(|path| patch_of(path, version));
    pyenv_versions
        .pop()
        .or_else(|| crate::setup::which(&program).filter(|path| !path.to_string_lossy().contains("/shims/")))
        .ok_or_else(|| format!("CPython {version} not found (pyenv's versions or `{program}` on PATH)"))
}

/// The patch number of the pyenv version directory holding `path` (`…/3.10.13/bin/python3.10`).
fn patch_of(path: &Path, version: &str) -> u32 {
    path.ancestors()
        .nth(2)
        .and_then(|dir| dir.file_name()?.to_str()?.strip_prefix(&format!("{version}."))?.parse().ok())
        .unwrap_or(0)
}

/// `venv/bin`, then the directories of `PATH` that hold none of [`BUILD_TOOLS`]; an error if a
/// build tool is still found on it.
fn path_without_build_tools(venv: &Path) -> Result<OsString> {
    let current = std::env::var_os("PATH").unwrap_or_default();
    let kept = std::env::split_paths(&current).filter(|dir| BUILD_TOOLS.iter().all(|tool| !dir.join(tool).exists()));
    let path = std::env::join_paths(std::iter::once(venv.join("bin")).chain(kept)).map_err(|e| e.to_string())?;
    match std::env::split_paths(&path).find(|dir| BUILD_TOOLS.iter().any(|tool| dir.join(tool).exists())) {
        Some(dir) => Err(format!("{} holds a build tool", dir.display())),
        None => Ok(path),
    }
}

/// `.deps/wheels`: every file pip resolved for the checks, kept between runs (pip's own HTTP
/// cache keeps only responses that say they may be cached).
fn wheelhouse() -> Result<PathBuf> {
    let house = deps().join("wheels");
    fs::create_dir_all(&house).map_err(|e| format!("creating {}: {e}", house.display()))?;
    Ok(house)
}

/// Removes the copies of this package's wheels that `pip download` leaves in `house`: only what
/// the wheels are installed beside is kept.
pub fn forget_our_wheels(house: &Path) -> Result<()> {
    for entry in fs::read_dir(house).map_err(|e| format!("{}: {e}", house.display()))?.flatten() {
        if entry.file_name().to_string_lossy().starts_with("gemma_vision-") {
            fs::remove_file(entry.path()).map_err(|e| format!("{}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// A wheel's file name and size.
pub fn describe(wheel: &Path) -> String {
    let name = wheel.file_name().map_or_else(|| wheel.display().to_string(), |n| n.to_string_lossy().into_owned());
    let size = fs::metadata(wheel).map_or(0, |m| m.len());
    format!("{name} ({:.1} MB)", size as f64 / 1e6)
}
