//! `cargo xtask test`: setup, then formatting, lints, every test in the workspace, the build
//! against MLX's CUDA wheel (`cuda_build`), the library crates' docs (warnings denied), every
//! published crate packaged and a new crate outside the workspace built on the packages
//! (`package`, `downstream`), and the Python package's suite.

use crate::project::{Result, cargo, cmd, python, run, target_dir};
use crate::{cuda_build, downstream, package, setup};
use std::fs;
use std::path::PathBuf;

pub fn main(extra: &[String]) -> Result<()> {
    setup::main()?;
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    run(cargo().args(["test", "--workspace"]).args(extra))?;
    cuda_build::check()?;
    package::docs()?;
    let packaged = package::package()?;
    downstream::main(&target_dir().join("debug").join("gemma-vision"), &packaged)?;
    python_package()
}

/// Builds the `gemma-vision` wheel (the dev profile, which reuses what `cargo test` built),
/// installs it into `.deps/venv` and runs its pytest suite (`crates/python/tests`) against the
/// `gemma-vision` command `cargo test` built; the suite also installs the wheel beside mlx-vlm
/// into a fresh environment of its own (`GEMMA_VISION_WHEEL`).
fn python_package() -> Result<()> {
    let wheels = target_dir().join("python-wheels");
    let _ = fs::remove_dir_all(&wheels);
    let mut build = cmd(python(), &["-m", "maturin", "build", "--manifest-path", "crates/python/Cargo.toml"]);
    run(build.arg("--interpreter").arg(python()).arg("--out").arg(&wheels))?;
    let wheel = built_wheel(&wheels)?;
    run(cmd(
        python(),
        &["-m", "pip", "install", "-q", "--disable-pip-version-check", "--force-reinstall", "--no-deps"],
    )
    .arg(&wheel))?;
    let binary = target_dir().join("debug").join("gemma-vision");
    run(cmd(python(), &["-m", "pytest", "-q", "-p", "no:cacheprovider", "crates/python/tests"])
        .env("GEMMA_VISION", binary)
        .env("GEMMA_VISION_WHEEL", &wheel))
}

/// The one wheel maturin wrote into `dir`.
fn built_wheel(dir: &std::path::Path) -> Result<PathBuf> {
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

/// `cargo xtask doctor`: what this build runs on.
pub fn doctor() -> Result<()> {
    setup::main()?;
    run(cargo().args(["run", "--release", "-p", "gemma-vision-layers", "--example", "doctor"]))
}
