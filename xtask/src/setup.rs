//! `cargo xtask setup`: installs or unpacks everything the build and the reference need.
//!
//! Idempotent: each step records what it installed in a stamp file and is skipped while the
//! stamp matches, so a second run takes a second or two. Everything lands in `.deps/`:
//! - Debian packages (`libclang-dev` for bindgen, `cmake` and
//!   `nasm` for libjpeg-turbo), installed with apt-get when running as root, else named.
//! - `.deps/venv`: a Python virtual environment holding the reference exactly as a user
//!   installs it (`xtask/python-reference.txt`: mlx-vlm and the MLX wheels, with what pip
//!   resolves for them, recorded in `.deps/venv/reference.lock`), then the project's tools
//!   (`xtask/python-requirements.txt`), which may not change a package of the reference.
//! - `.deps/mlx`: a link to the wheel's MLX directory (`include/`, `lib/libmlx.so`), which
//!   `mlx-ffi`'s build script finds. mlx-c's sources are the build script's own business.
//! - `.deps/corpus/pillow-13.0.0/Tests/images`: Pillow's test images (every format, broken and
//!   hostile files), the files of the corpus rows of `cargo xtask parity preprocess` and the
//!   seeds of the decode fuzz targets (see [`corpus`](crate::corpus)).

use crate::corpus;
use crate::stamp::{stamp_matches, write_stamp};
use project::{self, Result, cmd, deps, output, python, run};
use std::fs;
use std::path::{Path, PathBuf};

pub(crate) const DEBIAN_PACKAGES: &[&str] = &["libclang-dev", "cmake", "nasm"];

pub fn main() -> Result<()> {
    let started = std::time::Instant::now();
    fs::create_dir_all(deps()).map_err(|e| format!("creating .deps: {e}"))?;
    warn_if_disk_is_short();
    debian_packages(DEBIAN_PACKAGES)?;
    python_env()?;
    mlx_link()?;
    corpus::ensure(&deps().join("corpus"), &corpus::PILLOW)?;
    eprintln!("setup: ready in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Free space below which setup warns: a fresh clone's `cargo xtask test` writes ~2.9 GB
/// (`target/` and `.deps/`), the release builds of parity and bench several GB more.
const DISK_NEEDED_GIB: u64 = 8;

/// Names the free space when it is short: a full disk otherwise shows up as some C build
/// script failing half-way.
fn warn_if_disk_is_short() {
    let Ok(df) = output(cmd("df", &["-Pk", "."])) else { return };
    let free_kib = df.lines().nth(1).and_then(|line| line.split_whitespace().nth(3)?.parse::<u64>().ok());
    if let Some(free_kib) = free_kib.filter(|&kib| kib < DISK_NEEDED_GIB << 20) {
        eprintln!(
            "setup: warning: {:.1} GiB free where the project lives (under {DISK_NEEDED_GIB} GiB); a cold test build \
             writes ~3 GiB, the release builds more",
            free_kib as f64 / f64::from(1 << 20)
        );
    }
}

/// Installs those of `packages` that dpkg does not list (apt-get, as root), or names them.
pub fn debian_packages(packages: &[&str]) -> Result<()> {
    if which("dpkg-query").is_none() {
        eprintln!("setup: not a Debian system; install these yourself: {}", packages.join(" "));
        return Ok(());
    }
    let missing: Vec<&str> = packages.iter().copied().filter(|p| !dpkg_installed(p)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !is_root() {
        return Err(format!("missing Debian packages; run: sudo apt-get install -y {}", missing.join(" ")));
    }
    eprintln!("setup: apt-get install {}", missing.join(" "));
    let install = || {
        let mut apt = cmd("apt-get", &["install", "-y", "-q", "--no-install-recommends"]);
        apt.args(&missing).env("DEBIAN_FRONTEND", "noninteractive");
        run(&mut apt)
    };
    if install().is_err() {
        run(cmd("apt-get", &["update", "-q"]).env("DEBIAN_FRONTEND", "noninteractive"))?;
        install()?;
    }
    Ok(())
}

/// What the Python environment holds: the reference as a user installs it, then the project's
/// tools constrained by what pip resolved for the reference.
fn python_recipe() -> String {
    let root = project::root();
    let read = |name: &str| fs::read_to_string(root.join("xtask").join(name)).unwrap_or_default();
    format!("{}\n--then\n{}", read("python-reference.txt"), read("python-requirements.txt"))
}

/// `.deps/venv`: `pip install -r xtask/python-reference.txt` (mlx-vlm and the MLX wheels, with
/// every dependency pip resolves, exactly as a user types it), `pip freeze` of that into
/// [`reference_lock`], then the project's tools with that freeze as constraints.
fn python_env() -> Result<()> {
    let venv = deps().join("venv");
    let recipe = python_recipe();
    if stamp_matches(&venv, &recipe) {
        return Ok(());
    }
    eprintln!("setup: creating the Python environment in .deps/venv (the reference, then the tools)");
    if !python().exists() {
        let python3 = which("python3").ok_or("python3 not found (needed for the reference)")?;
        run(cmd(python3, &["-m", "venv"]).arg(&venv))?;
    }
    let xtask = project::root().join("xtask");
    let pip = || cmd(python(), &["-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "on"]);
    run(pip().arg("-r").arg(xtask.join("python-reference.txt")))?;
    let freeze = output(cmd(python(), &["-m", "pip", "freeze", "--disable-pip-version-check"]))?;
    fs::write(reference_lock(), format!("{freeze}\n")).map_err(|e| format!("writing the reference lock: {e}"))?;
    run(pip().arg("-r").arg(xtask.join("python-requirements.txt")).arg("-c").arg(reference_lock()))?;
    write_stamp(&venv, &recipe)
}

/// What pip resolved for the reference (`pip freeze` right after installing it): part of the
/// identity of every reference output kept between runs.
pub fn reference_lock() -> PathBuf {
    deps().join("venv/reference.lock")
}

/// `.deps/mlx` → the wheel's `mlx` package directory (headers, libmlx, CMake config).
fn mlx_link() -> Result<()> {
    let link = deps().join("mlx");
    let target = output(cmd(
        python(),
        &["-c", "import os, mlx; print(os.path.dirname(mlx.__file__) if mlx.__file__ else list(mlx.__path__)[0])"],
    ))?;
    // Relative when the wheel is in .deps/venv, so the link survives the checkout moving (or a
    // worktree sharing this .deps).
    let target = match (fs::canonicalize(&target), fs::canonicalize(deps())) {
        (Ok(wheel), Ok(deps)) => wheel.strip_prefix(&deps).map(Path::to_path_buf).unwrap_or(wheel),
        _ => PathBuf::from(target),
    };
    if fs::read_link(&link).ok().is_some_and(|t| t == target) {
        return Ok(());
    }
    let _ = fs::remove_file(&link);
    std::os::unix::fs::symlink(&target, &link).map_err(|e| format!("linking .deps/mlx: {e}"))
}

fn dpkg_installed(package: &str) -> bool {
    output(cmd("dpkg-query", &["-W", "-f=${Status}", package])).is_ok_and(|s| s.ends_with("installed"))
}

fn is_root() -> bool {
    output(cmd("id", &["-u"])).is_ok_and(|uid| uid == "0")
}

pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}
