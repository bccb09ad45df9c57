//! `cargo xtask test`: setup, then formatting, lints and every test in the workspace.

use crate::project::{Result, cargo, run};
use crate::setup;

pub fn main(extra: &[String]) -> Result<()> {
    setup::main()?;
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args(["clippy", "--workspace", "--all-targets", "--quiet", "--", "-D", "warnings"]))?;
    run(cargo().args(["test", "--workspace"]).args(extra))
}

/// `cargo xtask doctor`: what this build runs on.
pub fn doctor() -> Result<()> {
    setup::main()?;
    run(cargo().args(["run", "--release", "--quiet", "-p", "tensor", "--example", "doctor"]))
}
