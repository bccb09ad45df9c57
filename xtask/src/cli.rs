//! `cargo xtask encode …` / `preprocess …` / `inspect …` / `embed …`: setup if needed, build the release
//! `gemma-vision` binary, and run it with the same arguments (see its `--help`). Scripts may
//! call `target/release/gemma-vision` directly once built.

use crate::setup;
use project::{Result, cargo, release_binary, run};

pub fn main(command: &str, args: &[String]) -> Result<()> {
    setup::main()?;
    run(cargo().args(["build", "--release", "-p", "gemma-vision", "--bin", "gemma-vision"]))?;
    let binary = release_binary("gemma-vision");
    let status = std::process::Command::new(&binary)
        .arg(command)
        .args(args)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    if !status.success() {
        // gemma-vision has printed its one-line error; keep its exit status.
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}
