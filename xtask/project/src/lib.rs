//! What xtask's commands and the bench suites (`bench/`) share: where things live, running
//! commands with readable failures, and the [`stack`] a parity or bench run uses.

use std::borrow::BorrowMut;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

pub mod stack;

pub type Result<T, E = String> = std::result::Result<T, E>;

/// The repository root (the workspace directory).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("this crate lives at xtask/project").to_path_buf()
}

/// `.deps/`: everything setup installs or unpacks (gitignored).
pub fn deps() -> PathBuf {
    root().join(".deps")
}

/// The Python interpreter of the project's virtual environment.
pub fn python() -> PathBuf {
    deps().join("venv/bin/python")
}

/// The `cargo` program that runs this xtask.
pub fn cargo_program() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The `cargo` that runs this xtask, run from the repository root.
pub fn cargo() -> Command {
    let mut cmd = Command::new(cargo_program());
    cmd.current_dir(root());
    cmd
}

/// A command with its program and arguments, run from the repository root.
pub fn cmd(program: impl AsRef<OsStr>, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(root());
    cmd
}

/// Runs `cmd` with inherited stdio; an error names the command and its exit status.
pub fn run(mut cmd: impl BorrowMut<Command>) -> Result<()> {
    let cmd = cmd.borrow_mut();
    let status = status(&mut *cmd)?;
    if status.success() { Ok(()) } else { Err(format!("`{}` failed ({status})", describe(cmd))) }
}

/// Runs `cmd` with inherited stdio and returns its exit status.
pub fn status(mut cmd: impl BorrowMut<Command>) -> Result<ExitStatus> {
    let cmd = cmd.borrow_mut();
    cmd.status().map_err(|e| format!("cannot run `{}`: {e}", describe(cmd)))
}

/// Runs `cmd` and returns its trimmed standard output.
pub fn output(mut cmd: impl BorrowMut<Command>) -> Result<String> {
    let cmd = cmd.borrow_mut();
    let out = cmd.output().map_err(|e| format!("cannot run `{}`: {e}", describe(cmd)))?;
    if !out.status.success() {
        return Err(format!(
            "`{}` failed ({}): {}",
            describe(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program()).chain(cmd.get_args()).map(|s| s.to_string_lossy()).collect::<Vec<_>>().join(" ")
}

/// The reference's Python, exactly as pip installs it: the stock MLX wheels with their bundled
/// reference BLAS, nothing preloaded.
pub fn oracle_python(script: &Path) -> Command {
    let mut cmd = Command::new(python());
    cmd.arg(script).current_dir(root());
    cmd
}

/// Cargo's target directory (`CARGO_TARGET_DIR`, else `<root>/target`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).map_or_else(|| root().join("target"), |d| root().join(d))
}

/// A release binary built by cargo.
pub fn release_binary(name: &str) -> PathBuf {
    target_dir().join("release").join(name)
}

/// Where parity and bench runs write their intermediate files.
pub fn work_dir(name: &str) -> Result<PathBuf> {
    let dir = target_dir().join(name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    Ok(dir)
}
