//! `cargo xtask cuda-build`: the build against MLX's CUDA wheel, on any Linux machine (no GPU,
//! no CUDA libraries), and what opening that libmlx does where the driver is absent.
//!
//! What links: Rust code never links libmlx (`mlx-ffi` opens it at run time), so the one link
//! step against MLX is `mlx-ffi`'s build script linking mlx-c into `libmlx_c.so` against
//! libmlx. That is a shared-library link: GNU ld reads libmlx's `NEEDED` CUDA libraries only to
//! warn that it cannot find them (it reports undefined symbols of a shared input only when
//! linking an executable), so the link needs no CUDA library. `--no-undefined` still holds for
//! mlx-c's own symbols: every MLX function mlx-c calls must be in the CUDA libmlx.
//!
//! So the check builds `mlx-ffi`'s library, tests and examples against the wheel's MLX
//! (`MLX_DIR`) in their own target directory (`target/cuda-build`: the workspace's target keeps
//! its own MLX, and neither rebuilds the other), then runs the `open_mlx` example, which opens
//! MLX as every crate above does. Where the dynamic linker cannot find libmlx's CUDA libraries
//! it must exit with status 1 and one line naming the missing library
//! (`mlx_ffi::LoadError::MissingDependency`); where it finds them (a machine with the driver and the
//! `nvidia-*` wheels' libraries on its path) it must open MLX 0.32.4. A crash (a signal, an
//! abort in a static initialiser) fails the check.

use crate::cuda_wheel;
use crate::project::{Result, cargo, target_dir};
use crate::setup;
use std::path::Path;

pub fn main() -> Result<()> {
    setup::main()?;
    check()
}

/// The check itself (setup done).
pub fn check() -> Result<()> {
    let started = std::time::Instant::now();
    let mlx_dir = cuda_wheel::ensure()?;
    let target = target_dir().join("cuda-build");
    eprintln!("cuda-build: mlx-ffi (library, tests, examples) against {}", mlx_dir.display());
    let mut build = cargo();
    build.args(["build", "-p", "gemma-vision-mlx-ffi", "--lib", "--tests", "--examples"]);
    crate::project::run(build.env("MLX_DIR", &mlx_dir).env("CARGO_TARGET_DIR", &target))?;
    let outcome = open_probe(&target.join("debug/examples/open_mlx"), &mlx_dir)?;
    eprintln!("cuda-build: linked against the CUDA wheel; {outcome} ({:.1} s)", started.elapsed().as_secs_f64());
    Ok(())
}

/// Runs the `open_mlx` example on the CUDA libmlx and judges how it ended.
fn open_probe(binary: &Path, mlx_dir: &Path) -> Result<String> {
    let out = std::process::Command::new(binary)
        .env("MLX_DIR", mlx_dir)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    judge(out.status.code(), &stdout, &stderr)
}

/// How `open_mlx` ended: MLX opened, or one clear error naming a missing library; anything
/// else (a signal, another status, several lines) is a failure of the check.
fn judge(code: Option<i32>, stdout: &str, stderr: &str) -> Result<String> {
    match code {
        Some(0) if stdout.starts_with(&format!("MLX {}", cuda_wheel::VERSION)) => {
            Ok(format!("opening it here works: {stdout}"))
        }
        Some(1) if stderr.lines().count() == 1 && stderr.contains("which the dynamic linker cannot find") => {
            Ok(format!("opening it here fails cleanly: {stderr}"))
        }
        _ => Err(format!(
            "opening the CUDA libmlx neither worked nor failed with one clear error (exit {}):\n{stdout}\n{stderr}",
            code.map_or_else(|| "by a signal".to_owned(), |c| c.to_string())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_opened_mlx_or_one_clear_error_passes() {
        assert!(judge(Some(0), "MLX 0.32.4 at /x/libmlx.so", "").is_ok());
        let clear = "error: cannot open /x/libmlx.so: it needs libnccl.so.2, which the dynamic linker cannot find; …";
        assert!(judge(Some(1), "", clear).is_ok());
        assert!(judge(None, "", "").is_err());
        assert!(judge(Some(134), "", clear).is_err());
        assert!(judge(Some(1), "", &format!("{clear}\nterminate called")).is_err());
        assert!(judge(Some(0), "MLX 0.32.2 at /x/libmlx.so", "").is_err());
    }
}
