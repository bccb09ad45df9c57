//! `cargo xtask test`: setup, then formatting, lints, every test in the workspace, a check that
//! the bench's candle crate (`bench/candle-gemma4`, its own workspace) still builds on our
//! crates, the build against MLX's CUDA wheel (`cuda_build`), the library crates' docs
//! (warnings denied), every published crate packaged and a new crate outside the workspace built on the packages
//! (`package`, `downstream`), stock MLX's arithmetic on aarch64 under emulation against this
//! machine's and both encoders cross-built for aarch64 against stock aarch64 mlx-vlm there
//! (`emulation`), and the Python package's suite, then its wheels (the aarch64 one cross-built
//! on the emulation step's outputs and run under `qemu-aarch64`) and its source install as
//! users install them (`wheels`).

use crate::{cuda_build, downstream, emulation, package, setup, wheels};
use project::{Result, cargo, cmd, python, root, run, target_dir};
use std::path::PathBuf;

pub fn main(extra: &[String]) -> Result<()> {
    setup::main()?;
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    run(cargo().args(["test", "--workspace"]).args(extra))?;
    let candle = root().join("bench/candle-gemma4/Cargo.toml");
    run(cargo().args(["check", "--locked", "--manifest-path"]).arg(candle).arg("--target-dir").arg(target_dir()))?;
    cuda_build::check()?;
    package::docs()?;
    let packaged = package::package()?;
    downstream::main(&target_dir().join("debug").join("gemma-vision"), &packaged)?;
    emulation::main()?;
    let abi3_wheel = python_package()?;
    wheels::binary(&abi3_wheel)?;
    wheels::source_install()
}

/// Builds the `gemma-vision` wheel (the dev profile, which reuses what `cargo test` built),
/// installs it into `.deps/venv` and runs its pytest suite (`crates/python/tests`) against the
/// `gemma-vision` command `cargo test` built and the Hub stand-in (`hub_stand_in`); the suite also installs the wheel beside mlx-vlm
/// into a fresh environment of its own (`GEMMA_VISION_WHEEL`). Returns the wheel.
fn python_package() -> Result<PathBuf> {
    let wheel = wheels::build(&python(), &target_dir().join("python-wheels"))?;
    run(cmd(
        python(),
        &["-m", "pip", "install", "-q", "--disable-pip-version-check", "--force-reinstall", "--no-deps"],
    )
    .arg(&wheel))?;
    let binary = target_dir().join("debug").join("gemma-vision");
    run(cargo().args(["build", "-p", "gemma-vision-hub", "--features", "stand-in", "--example", "hub_stand_in"]))?;
    let stand_in = target_dir().join("debug").join("examples").join("hub_stand_in");
    run(cmd(python(), &["-m", "pytest", "-q", "-p", "no:cacheprovider", "crates/python/tests"])
        .env("GEMMA_VISION", binary)
        .env("HUB_STAND_IN", stand_in)
        .env("GEMMA_VISION_WHEEL", &wheel))?;
    Ok(wheel)
}

/// `cargo xtask doctor`: what this build runs on.
pub fn doctor() -> Result<()> {
    setup::main()?;
    run(cargo().args(["run", "--release", "-p", "gemma-vision-layers", "--example", "doctor"]))
}
