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
//! (`MLX_DIR`) with its `alternate-mlx` feature: a build of the crate apart from the default
//! one, in the same target directory, so that it shares every dependency already built there
//! and neither build invalidates the other. Then it runs that build's `open_mlx` example, which opens
//! MLX as every crate above does. Where the dynamic linker cannot find libmlx's CUDA libraries
//! it must exit with status 1 and one line naming the missing library
//! (`mlx_ffi::LoadError::MissingDependency`); where it finds them (a machine with the driver and the
//! `nvidia-*` wheels' libraries on its path) it must open MLX 0.32.4. A crash (a signal, an
//! abort in a static initialiser) fails the check.

use crate::cuda_wheel;
use crate::setup;
use project::{Result, cargo, output};
use std::path::{Path, PathBuf};

pub fn main() -> Result<()> {
    setup::main()?;
    check()
}

/// The check itself (setup done).
pub fn check() -> Result<()> {
    let started = std::time::Instant::now();
    let mlx_dir = cuda_wheel::ensure()?;
    eprintln!("cuda-build: mlx-ffi (library, tests, examples) against {}", mlx_dir.display());
    let mut build = cargo();
    build.args([
        "build",
        "-p",
        "gemma-vision-mlx-ffi",
        "--features",
        "alternate-mlx",
        "--lib",
        "--tests",
        "--examples",
    ]);
    build.args(["--message-format", "json-render-diagnostics"]).env("MLX_DIR", &mlx_dir);
    let messages = output(build)?;
    let probe = example_executable(&messages, "open_mlx")
        .ok_or("cargo reported no executable of the open_mlx example of the alternate-mlx build")?;
    let outcome = open_probe(&probe, &mlx_dir)?;
    eprintln!("cuda-build: linked against the CUDA wheel; {outcome} ({:.1} s)", started.elapsed().as_secs_f64());
    Ok(())
}

/// The executable cargo built for the example `name`, from its JSON messages (the one of this
/// build, named by its hash: the unhashed copy in `examples/` belongs to whichever build of the
/// crate ran last).
fn example_executable(messages: &str, name: &str) -> Option<PathBuf> {
    messages.lines().filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok()).find_map(|message| {
        let target = &message["target"];
        let is_example = target["kind"].as_array()?.iter().any(|kind| kind == "example");
        (message["reason"] == "compiler-artifact" && target["name"] == name && is_example)
            .then(|| message["executable"].as_str().map(PathBuf::from))?
    })
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
    fn the_example_s_executable_is_read_from_cargo_s_messages() {
        let messages = concat!(
            r#"{"reason":"compiler-artifact","target":{"name":"open","kind":["test"]},"executable":"/t/open-1"}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"name":"open_mlx","kind":["example"]},"executable":"/t/open_mlx-2"}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        assert_eq!(example_executable(messages, "open_mlx"), Some(PathBuf::from("/t/open_mlx-2")));
        assert_eq!(example_executable(messages, "open"), None);
    }

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
