//! The release wheel of `crates/python`, built and installed into `.deps/venv` for the suites
//! that run the Python package (`embed`'s Ray job, `mlx-vlm`).

use project::{Result, cmd, python, run};
use std::fs;
use std::path::Path;

/// Builds the release wheel into `dir/wheels` and installs it into `.deps/venv`.
pub fn install_release_wheel(dir: &Path) -> Result<()> {
    eprintln!("bench: building and installing the release wheel");
    let wheels = dir.join("wheels");
    let _ = fs::remove_dir_all(&wheels);
    let mut build = cmd(python(), &["-m", "maturin", "build", "--release"]);
    run(build
        .args(["--manifest-path", "crates/python/Cargo.toml", "--interpreter"])
        .arg(python())
        .arg("--out")
        .arg(&wheels))?;
    let wheel = fs::read_dir(&wheels)
        .map_err(|e| format!("{}: {e}", wheels.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("maturin wrote no wheel")?;
    run(cmd(python(), &["-m", "pip", "install", "-q", "--force-reinstall", "--no-deps"]).arg(wheel))
}
