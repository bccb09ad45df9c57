//! `cargo xtask soak [--iterations N]`: encodes the checked-in tiny checkpoints' images over and
//! over in a release build and prints MLX's active memory and the resident set as it goes.

use crate::setup;
use project::{Result, cargo, root, run};

pub fn main(args: &[String]) -> Result<()> {
    setup::main()?;
    let fixtures = root().join("crates/vision/tests/fixtures");
    for (case, images) in [
        ("tiny-clipped", ["noise-20x30.png", "gradient-37x23.png"]),
        ("tiny-unified", ["checker-20x30.png", "gradient-37x23.png"]),
    ] {
        println!("\nsoak: {case}");
        let dir = fixtures.join(case);
        let mut cmd = cargo();
        cmd.args(["run", "--release", "-p", "gemma-vision-encoder", "--example", "soak", "--"])
            .arg(dir.join("model"))
            .args(images.iter().map(|i| dir.join("images").join(i)))
            .args(args);
        run(cmd)?;
    }
    Ok(())
}
