//! `cargo xtask setup`: installs or unpacks everything the build and the reference need.
//!
//! Idempotent: each step records what it installed in a stamp file and is skipped while the
//! stamp matches, so a second run takes a second or two. Everything lands in `.deps/`:
//! - Debian packages (`libclang-dev` for bindgen, `cmake` and
//!   `nasm` for libjpeg-turbo), installed with apt-get when running as root, else named.
//! - `.deps/venv`: a Python virtual environment with the pinned MLX wheels (libmlx, headers,
//!   the Python API), NumPy, Pillow, and the reference mlx-vlm (`xtask/python-*.txt`).
//! - `.deps/mlx`: a link to the wheel's MLX directory (`include/`, `lib/libmlx.so`).
//! - `.deps/mlx-c`: mlx-c 0.7.0's sources, taken out of the crates.io package `mlx-sys` 0.7.0.

use crate::project::{self, Result, cmd, deps, output, python, run};
use std::fs;
use std::path::{Path, PathBuf};

const DEBIAN_PACKAGES: &[&str] = &["libclang-dev", "cmake", "nasm"];
const MLX_SYS_VERSION: &str = "0.7.0";

pub fn main() -> Result<()> {
    let started = std::time::Instant::now();
    fs::create_dir_all(deps()).map_err(|e| format!("creating .deps: {e}"))?;
    warn_if_disk_is_short();
    debian_packages()?;
    python_env()?;
    python_package_tools()?;
    mlx_link()?;
    mlx_c_sources()?;
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

fn debian_packages() -> Result<()> {
    if which("dpkg-query").is_none() {
        eprintln!("setup: not a Debian system; install libclang yourself");
        return Ok(());
    }
    let missing: Vec<&str> = DEBIAN_PACKAGES.iter().copied().filter(|p| !dpkg_installed(p)).collect();
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

fn python_recipe() -> String {
    let root = project::root();
    let read = |name: &str| fs::read_to_string(root.join("xtask").join(name)).unwrap_or_default();
    format!("{}\n--no-deps\n{}", read("python-requirements.txt"), read("python-nodeps.txt"))
}

fn python_env() -> Result<()> {
    let venv = deps().join("venv");
    let recipe = python_recipe();
    if stamp_matches(&venv, &recipe) {
        return Ok(());
    }
    eprintln!("setup: creating the Python environment in .deps/venv");
    if !python().exists() {
        let python3 = which("python3").ok_or("python3 not found (needed for the reference)")?;
        run(cmd(python3, &["-m", "venv"]).arg(&venv))?;
    }
    let req = project::root().join("xtask");
    let pip = |args: &[&str]| {
        let mut pip = cmd(python(), &["-m", "pip", "install", "-q", "--disable-pip-version-check"]);
        pip.args(args);
        run(&mut pip)
    };
    pip(&["-r", &req.join("python-requirements.txt").to_string_lossy()])?;
    pip(&["--no-deps", "-r", &req.join("python-nodeps.txt").to_string_lossy()])?;
    write_stamp(&venv, &recipe)
}

/// The Python package's build and test tools (`xtask/python-package-requirements.txt`: maturin,
/// pytest, Ray Data, pyarrow, ml_dtypes) into `.deps/venv`, constrained by the pins of
/// `python-requirements.txt` so that MLX and NumPy stay the reference's. Stamped separately.
fn python_package_tools() -> Result<()> {
    let xtask = project::root().join("xtask");
    let (tools, pins) = (xtask.join("python-package-requirements.txt"), xtask.join("python-requirements.txt"));
    let recipe = format!(
        "{}\n--constraint\n{}",
        fs::read_to_string(&tools).unwrap_or_default(),
        fs::read_to_string(&pins).unwrap_or_default()
    );
    let stamp = deps().join("venv/.xtask-stamp-python-package");
    if fs::read_to_string(&stamp).is_ok_and(|s| s == recipe) {
        return Ok(());
    }
    eprintln!("setup: installing the Python package's tools (maturin, pytest, Ray Data) into .deps/venv");
    let mut pip = cmd(python(), &["-m", "pip", "install", "-q", "--disable-pip-version-check", "-r"]);
    run(pip.arg(&tools).arg("-c").arg(&pins))?;
    fs::write(&stamp, recipe).map_err(|e| format!("writing {}: {e}", stamp.display()))
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

fn mlx_c_recipe() -> String {
    format!("mlx-sys {MLX_SYS_VERSION} src/mlx-c")
}

/// Fetches the `mlx-sys` package through cargo (the crates.io registry) and unpacks its
/// bundled mlx-c sources. The crate itself is never built or depended on.
fn mlx_c_sources() -> Result<()> {
    let dest = deps().join("mlx-c");
    let recipe = mlx_c_recipe();
    if stamp_matches(&dest, &recipe) {
        return Ok(());
    }
    eprintln!("setup: fetching mlx-c sources (crates.io mlx-sys {MLX_SYS_VERSION})");
    let fetch_dir = deps().join("fetch-mlx-sys");
    fs::create_dir_all(fetch_dir.join("src")).map_err(|e| e.to_string())?;
    fs::write(
        fetch_dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"fetch-mlx-sys\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nmlx-sys = {{ version = \"={MLX_SYS_VERSION}\", default-features = false }}\n\n\
             [workspace]\n"
        ),
    )
    .map_err(|e| e.to_string())?;
    fs::write(fetch_dir.join("src/lib.rs"), "").map_err(|e| e.to_string())?;
    run(project::cargo().args(["fetch", "--quiet", "--manifest-path"]).arg(fetch_dir.join("Cargo.toml")))?;

    let archive = find_crate_archive(&format!("mlx-sys-{MLX_SYS_VERSION}.crate"))
        .ok_or("mlx-sys archive not found in cargo's registry cache after `cargo fetch`")?;
    let unpack = deps().join("mlx-c.unpack");
    let _ = fs::remove_dir_all(&unpack);
    fs::create_dir_all(&unpack).map_err(|e| e.to_string())?;
    let member = format!("mlx-sys-{MLX_SYS_VERSION}/src/mlx-c");
    run(cmd("tar", &["-xzf"]).arg(&archive).arg("-C").arg(&unpack).arg(&member))?;
    let _ = fs::remove_dir_all(&dest);
    fs::rename(unpack.join(&member), &dest).map_err(|e| format!("moving mlx-c into place: {e}"))?;
    let _ = fs::remove_dir_all(&unpack);
    write_stamp(&dest, &recipe)
}

fn find_crate_archive(file: &str) -> Option<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(Into::into)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
    fs::read_dir(cargo_home.join("registry/cache"))
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join(file))
        .find(|p| p.exists())
}

const STAMP: &str = ".xtask-stamp";

fn stamp_matches(dir: &Path, recipe: &str) -> bool {
    fs::read_to_string(dir.join(STAMP)).is_ok_and(|s| s == recipe)
}

fn write_stamp(dir: &Path, recipe: &str) -> Result<()> {
    fs::write(dir.join(STAMP), recipe).map_err(|e| format!("writing {}: {e}", dir.join(STAMP).display()))
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
