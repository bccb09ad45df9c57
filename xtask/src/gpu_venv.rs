//! The GPU for `cargo xtask gpu-check`, and the reference installed for it: mlx-vlm beside
//! MLX's GPU build, in a venv of its own under `.deps/` (the CPU reference, `.deps/venv`, is
//! never touched).
//!
//! [`detect`] runs before anything is installed. [`ensure`] builds the venv in
//! `.deps/venv-<backend>.partial` and renames it into place once every package is in, with a
//! stamp of what it holds: the venv exists complete or not at all, and a second run costs
//! nothing. (The venv is used through `python -m` only, which a renamed venv serves.)

use crate::corpus::fresh_dir;
use crate::setup::which;
use crate::stamp::{stamp_matches, write_stamp};
use project::{Result, cmd, deps, output, run};
use std::fs;
use std::path::{Path, PathBuf};

/// MLX's GPU builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The `mlx-cuda-12` wheel: Linux, an NVIDIA GPU and its driver.
    Cuda,
    /// The `mlx` wheel of macOS: Apple silicon.
    Metal,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cuda => "CUDA",
            Backend::Metal => "Metal",
        }
    }

    /// What pip installs: the reference as a user with this GPU installs it.
    fn reference(self) -> &'static [&'static str] {
        match self {
            Backend::Cuda => &["mlx-vlm==0.7.10", "mlx[cuda12]==0.32.4"],
            Backend::Metal => &["mlx-vlm==0.7.10", "mlx==0.32.4"],
        }
    }

    fn venv(self) -> PathBuf {
        deps().join(match self {
            Backend::Cuda => "venv-cuda",
            Backend::Metal => "venv-metal",
        })
    }
}

/// The tools beside the reference (the sample photographs of the parity and bench inputs),
/// constrained by what pip resolved for the reference.
const TOOLS: &[&str] = &["scikit-image==0.26.0"];

/// The GPU of this machine and what it is, or why there is none (nothing installed yet).
pub fn detect() -> Result<(Backend, String)> {
    let nothing = "gpu-check runs on a Linux machine with an NVIDIA GPU and its driver, or on an Apple-silicon Mac; \
                   nothing was installed or built";
    if cfg!(target_os = "macos") {
        return if cfg!(target_arch = "aarch64") {
            Ok((Backend::Metal, "Apple silicon (Metal)".to_owned()))
        } else {
            Err(format!("no GPU MLX runs on: MLX's Metal backend needs Apple silicon\n{nothing}"))
        };
    }
    if !cfg!(target_os = "linux") {
        return Err(format!("no GPU MLX runs on: MLX's GPU builds are for Linux (CUDA) and macOS (Metal)\n{nothing}"));
    }
    let Some(smi) = which("nvidia-smi") else {
        return Err(format!(
            "no NVIDIA GPU here: `nvidia-smi` (installed with the NVIDIA driver) is not on PATH\n{nothing}"
        ));
    };
    let out = cmd(&smi, &["-L"]).output().map_err(|e| format!("cannot run {}: {e}\n{nothing}", smi.display()))?;
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let said = format!("{listed}{}", String::from_utf8_lossy(&out.stderr));
        return Err(format!(
            "no usable NVIDIA GPU here: `nvidia-smi -L` failed ({}): {}\n{nothing}",
            out.status,
            said.trim()
        ));
    }
    parse_gpus(&listed)
        .map(|gpu| (Backend::Cuda, gpu))
        .ok_or_else(|| format!("no NVIDIA GPU here: `nvidia-smi -L` lists none ({:?})\n{nothing}", listed.trim()))
}

/// The first GPU of `nvidia-smi -L` (`GPU 0: NVIDIA H200 (UUID: GPU-…)` → `NVIDIA H200`), with
/// the count when there are several.
fn parse_gpus(listed: &str) -> Option<String> {
    let gpus: Vec<&str> = listed
        .lines()
        .filter_map(|line| line.trim().strip_prefix("GPU ")?.split_once(": ").map(|(_, rest)| rest))
        .map(|rest| rest.split(" (UUID").next().unwrap_or(rest).trim())
        .collect();
    let first = gpus.first()?;
    Some(if gpus.len() == 1 { (*first).to_owned() } else { format!("{first} (1 of {})", gpus.len()) })
}

fn recipe(backend: Backend) -> String {
    format!("{}\n--then\n{}\n", backend.reference().join("\n"), TOOLS.join("\n"))
}

/// Makes the backend's venv hold its reference and the tools; returns its interpreter.
pub fn ensure(backend: Backend) -> Result<PathBuf> {
    let venv = backend.venv();
    let recipe = recipe(backend);
    if stamp_matches(&venv, &recipe) && venv.join("bin/python").exists() {
        return Ok(venv.join("bin/python"));
    }
    let partial = venv.with_extension("partial");
    eprintln!("gpu-check: installing the {} reference into {} (once)", backend.name(), venv.display());
    let installed = install(backend, &partial, &recipe);
    if let Err(e) = installed {
        let _ = fs::remove_dir_all(&partial);
        return Err(format!("{e}\ngpu-check: the partial venv was removed"));
    }
    if venv.exists() {
        fs::remove_dir_all(&venv).map_err(|e| format!("replacing {}: {e}", venv.display()))?;
    }
    fs::rename(&partial, &venv).map_err(|e| format!("moving the venv into {}: {e}", venv.display()))?;
    Ok(venv.join("bin/python"))
}

/// A fresh venv at `dir`: the reference, `pip freeze` of it (`reference.lock`), the tools with
/// that freeze as constraints, and the stamp.
fn install(backend: Backend, dir: &Path, recipe: &str) -> Result<()> {
    let python3 = which("python3").ok_or("python3 not found (needed for the reference)")?;
    fresh_dir(dir)?;
    run(cmd(python3, &["-m", "venv"]).arg(dir))?;
    let python = dir.join("bin/python");
    let pip = || cmd(&python, &["-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off"]);
    run(pip().args(backend.reference()))?;
    let lock = dir.join("reference.lock");
    let freeze = output(cmd(&python, &["-m", "pip", "freeze", "--disable-pip-version-check"]))?;
    fs::write(&lock, format!("{freeze}\n")).map_err(|e| format!("writing {}: {e}", lock.display()))?;
    run(pip().args(TOOLS).arg("-c").arg(&lock))?;
    write_stamp(dir, recipe)
}

/// The directory of `python`'s `mlx` package (the one holding `mlx.core`, found without
/// importing MLX, by mlx-ffi's build script's rule): what `MLX_DIR` names for our side.
pub fn mlx_dir(python: &Path) -> Result<PathBuf> {
    let dir = output(cmd(python, &["-c", include_str!("../../crates/mlx-ffi/mlx_package.py")]))?;
    if dir.is_empty() {
        return Err(format!("{}: no `mlx.core` (the MLX wheels) installed", python.display()));
    }
    Ok(PathBuf::from(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_s_list_names_the_gpus() {
        let one = "GPU 0: NVIDIA H200 (UUID: GPU-0b4f9c1e-0000-0000-0000-000000000000)\n";
        assert_eq!(parse_gpus(one).as_deref(), Some("NVIDIA H200"));
        let two = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-a)\nGPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-b)\n";
        assert_eq!(parse_gpus(two).as_deref(), Some("NVIDIA A100-SXM4-80GB (1 of 2)"));
        assert_eq!(parse_gpus("No devices were found\n"), None);
        assert_eq!(parse_gpus(""), None);
    }
}
