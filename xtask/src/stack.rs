//! Where the two sides of a parity or bench run come from: the reference's Python, the MLX our
//! binaries are built against and the target directory they are built into, and the device
//! both sides run on.
//!
//! [`Stack::cpu`] is setup's (`.deps/venv`, `.deps/mlx`, cargo's target directory, MLX's
//! default device, the CPU there); `cargo xtask gpu-check` makes another, on a GPU venv and
//! its MLX.

use crate::project::{self, root, target_dir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variable both sides read for the device to run on (`cpu`, `gpu`); unset,
/// each runs on MLX's default device.
pub const DEVICE_VARIABLE: &str = "PARITY_DEVICE";

/// One reference Python and one MLX for our side, with the device both run on.
#[derive(Debug, Clone)]
pub struct Stack {
    /// The reference's interpreter (mlx-vlm and the MLX wheels installed beside it).
    pub python: PathBuf,
    /// `MLX_DIR` for our builds and binaries; `None`: `mlx-ffi`'s default (`.deps/mlx`).
    pub mlx_dir: Option<PathBuf>,
    /// Cargo's target directory for our builds.
    pub target_dir: PathBuf,
    /// [`DEVICE_VARIABLE`] for both sides; `None`: MLX's default device.
    pub device: Option<&'static str>,
}

impl Stack {
    /// Setup's: the project's venv, `.deps/mlx`, cargo's target directory, MLX's default device.
    pub fn cpu() -> Stack {
        Stack { python: project::python(), mlx_dir: None, target_dir: target_dir(), device: None }
    }

    /// `script` run by the reference's Python, from the repository root, on the stack's device.
    pub fn reference(&self, script: &Path) -> Command {
        let mut command = Command::new(&self.python);
        command.arg(script).current_dir(root());
        self.environment(&mut command);
        command
    }

    /// The `cargo` that builds our side: the stack's target directory and MLX.
    pub fn cargo(&self) -> Command {
        let mut command = project::cargo();
        if self.target_dir != target_dir() {
            command.env("CARGO_TARGET_DIR", &self.target_dir);
        }
        if let Some(mlx_dir) = &self.mlx_dir {
            command.env("MLX_DIR", mlx_dir);
        }
        command
    }

    /// A release binary of ours, built by [`Stack::cargo`].
    pub fn release_binary(&self, name: &str) -> PathBuf {
        self.target_dir.join("release").join(name)
    }

    /// Our `binary`, run on the stack's MLX and device.
    pub fn ours(&self, binary: &Path) -> Command {
        let mut command = Command::new(binary);
        self.environment(&mut command);
        command
    }

    fn environment(&self, command: &mut Command) {
        if let Some(mlx_dir) = &self.mlx_dir {
            command.env("MLX_DIR", mlx_dir);
        }
        if let Some(device) = self.device {
            command.env(DEVICE_VARIABLE, device);
        }
    }
}
