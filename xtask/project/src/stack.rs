//! Where the two sides of a parity or bench run come from: the reference's Python, the MLX our
//! binaries are built against and the target directory they are built into, the device both
//! sides run on, and the machine they run on.
//!
//! [`Stack::cpu`] is setup's (`.deps/venv`, `.deps/mlx`, cargo's target directory, MLX's
//! default device, the CPU there); `cargo xtask gpu-check` makes another, on a GPU venv and
//! its MLX; [`Stack::emulated_aarch64`] runs both sides on aarch64 Linux under `qemu-aarch64`
//! (`cargo xtask emulate`).

use crate::{deps, root, target_dir};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Rust target of aarch64 Linux, the machine [`Stack::emulated_aarch64`] emulates.
pub const AARCH64_LINUX: &str = "aarch64-unknown-linux-gnu";

/// The environment variable both sides read for the device to run on (`cpu`, `gpu`); unset,
/// each runs on MLX's default device.
pub const DEVICE_VARIABLE: &str = "PARITY_DEVICE";

/// One reference Python and one MLX for our side, with the device and the machine both run on.
#[derive(Debug, Clone)]
pub struct Stack {
    /// The reference's interpreter (mlx-vlm and the MLX wheels installed beside it; under
    /// emulation, the emulated machine's interpreter, its packages in [`Emulation::site`]).
    pub python: PathBuf,
    /// `MLX_DIR` for our builds and binaries; `None`: `mlx-ffi`'s default (`.deps/mlx`).
    pub mlx_dir: Option<PathBuf>,
    /// Cargo's target directory for our builds.
    pub target_dir: PathBuf,
    /// [`DEVICE_VARIABLE`] for both sides; `None`: MLX's default device.
    pub device: Option<&'static str>,
    /// Where the vision suite keeps reference outputs between runs (one directory per suite
    /// below it).
    pub reference_cache: PathBuf,
    /// Both sides on another machine, emulated; `None`: this machine.
    pub emulation: Option<Emulation>,
}

/// Another Linux machine under QEMU user-mode emulation: our side cross-built for its Rust
/// target, both sides run by `qemu` against its userland.
#[derive(Debug, Clone)]
pub struct Emulation {
    /// `qemu-<arch>`.
    pub qemu: PathBuf,
    /// The machine's userland (`qemu -L`): its C library and the reference's interpreter.
    pub sysroot: PathBuf,
    /// The reference's packages (`PYTHONPATH`).
    pub site: PathBuf,
    /// Cargo's target triple.
    pub target: &'static str,
    /// The C linker cargo links that target with.
    pub linker: &'static str,
    /// `PATH` of both sides: what MLX's CPU JIT finds (a `g++` there turns it on).
    pub path: OsString,
    /// `TMPDIR` of both sides: MLX's JIT cache, apart from this machine's (MLX names its
    /// kernels by graph, not by architecture).
    pub tmp: PathBuf,
    /// `PYTHONPYCACHEPREFIX` of the reference: its bytecode, kept out of the sources and
    /// the site, from one run to the next.
    pub pycache: PathBuf,
}

impl Stack {
    /// Setup's: the project's venv, `.deps/mlx`, cargo's target directory, MLX's default device.
    pub fn cpu() -> Stack {
        Stack {
            python: crate::python(),
            mlx_dir: None,
            target_dir: target_dir(),
            device: None,
            reference_cache: deps().join("parity-cache"),
            emulation: None,
        }
    }

    /// aarch64 Linux under `qemu`: the reference is Debian's arm64 CPython in `root/sysroot`
    /// with the aarch64 wheels in `root/site` (`crates/parity/python/aarch64_sysroot.py`);
    /// ours is cross-built for `aarch64-unknown-linux-gnu` against the aarch64 `mlx` package
    /// there, into cargo's target directory. `jit_bin`: the `PATH` of both sides, a directory
    /// whose `g++` builds aarch64 code (MLX's CPU JIT on); `None`: nothing on `PATH`, the JIT
    /// off. Each gets its own `TMPDIR` (the JIT's cache) and reference cache.
    pub fn emulated_aarch64(qemu: &Path, root: &Path, jit_bin: Option<&Path>) -> Stack {
        let label = if jit_bin.is_some() { "aarch64-jit" } else { "aarch64" };
        let path = jit_bin.map_or_else(|| OsString::from("/nonexistent"), |bin| bin.as_os_str().to_owned());
        Stack {
            python: root.join("sysroot/usr/bin/python3.11"),
            mlx_dir: Some(root.join("site/mlx")),
            target_dir: target_dir(),
            device: None,
            reference_cache: deps().join("parity-cache").join(format!("emulated-{label}")),
            emulation: Some(Emulation {
                qemu: qemu.to_path_buf(),
                sysroot: root.join("sysroot"),
                site: root.join("site"),
                target: AARCH64_LINUX,
                linker: "aarch64-linux-gnu-gcc",
                path,
                tmp: target_dir().join("emulation").join(format!("tmp-{label}")),
                pycache: target_dir().join("emulation/pycache"),
            }),
        }
    }

    /// `script` run by the reference's Python, from the repository root, on the stack's device.
    pub fn reference(&self, script: &Path) -> Command {
        let mut command = self.reference_python();
        command.arg(script);
        command
    }

    /// The reference's Python, arguments to follow, run from the repository root on the stack's
    /// device (under emulation: its site on the path, its bytecode kept apart).
    pub fn reference_python(&self) -> Command {
        let mut command = match &self.emulation {
            Some(emulation) => {
                let mut command = Command::new(&emulation.qemu);
                command.arg("-L").arg(&emulation.sysroot).arg(&self.python);
                command.env("PYTHONPATH", &emulation.site).env("PYTHONPYCACHEPREFIX", &emulation.pycache);
                command.env_remove("PYTHONDONTWRITEBYTECODE");
                command
            }
            None => Command::new(&self.python),
        };
        command.current_dir(root());
        self.environment(&mut command);
        command
    }

    /// The `cargo` that builds our side: the stack's target directory, MLX and target.
    pub fn cargo(&self) -> Command {
        let mut command = crate::cargo();
        self.build_environment(&mut command);
        command
    }

    /// What [`Stack::cargo`] sets, for another program that runs cargo (maturin).
    pub fn build_environment(&self, command: &mut Command) {
        if self.target_dir != target_dir() {
            command.env("CARGO_TARGET_DIR", &self.target_dir);
        }
        if let Some(mlx_dir) = &self.mlx_dir {
            command.env("MLX_DIR", mlx_dir);
        }
        if let Some(emulation) = &self.emulation {
            let triple = emulation.target.to_ascii_uppercase().replace('-', "_");
            command.env("CARGO_BUILD_TARGET", emulation.target);
            command.env(format!("CARGO_TARGET_{triple}_LINKER"), emulation.linker);
        }
    }

    /// A binary of ours built by [`Stack::cargo`] in `profile`'s directory (`release`, `debug`).
    pub fn binary(&self, profile: &str, name: &str) -> PathBuf {
        match &self.emulation {
            Some(emulation) => self.target_dir.join(emulation.target).join(profile).join(name),
            None => self.target_dir.join(profile).join(name),
        }
    }

    /// A release binary of ours, built by [`Stack::cargo`].
    pub fn release_binary(&self, name: &str) -> PathBuf {
        self.binary("release", name)
    }

    /// Our `binary`, run on the stack's MLX, device and machine.
    pub fn ours(&self, binary: &Path) -> Command {
        let mut command = match &self.emulation {
            Some(emulation) => {
                let mut command = Command::new(&emulation.qemu);
                command.arg("-L").arg(&emulation.sysroot).arg(binary);
                command
            }
            None => Command::new(binary),
        };
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
        if let Some(emulation) = &self.emulation {
            command.env("PATH", &emulation.path).env("TMPDIR", &emulation.tmp);
        }
    }
}
