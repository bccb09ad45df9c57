//! The downstream-crate test of `cargo xtask test` and `cargo xtask package`: a new Cargo
//! project outside the workspace that depends on the published crates as the README's "Use as a
//! dependency" section says, built and run with nothing set, as a new user would.
//!
//! The crates are the packaged ones (`package.rs`: each `.crate` as crates.io would receive it,
//! unpacked), reached through `[patch.crates-io]` since they are not on crates.io yet: nothing of
//! the working tree but what the packages hold, and no `.deps/` beside them, so `mlx-ffi`'s build
//! script must find MLX in the active Python environment (`.deps/venv`, activated: `VIRTUAL_ENV`
//! and `PATH`) and mlx-c's sources in the registry. `MLX_DIR`, `MLX_C_DIR` and `LD_LIBRARY_PATH`
//! are removed from the environment of both the build and the run. The project takes the
//! workspace's lock file and profiles and builds into its target directory, so that what it shares
//! with the workspace build is built once. The program encodes one image of a test checkpoint;
//! its features must be the bits `gemma-vision encode` writes for it.

use crate::package::Packaged;
use project::{self, Result, cmd, deps, root, run, target_dir};
use std::fs;
use std::path::Path;

/// The published crates the downstream crate builds (`vision` and what it depends on).
const CRATES: &[&str] = &[
    "gemma-vision-mlx-ffi",
    "gemma-vision-tensor",
    "gemma-vision-kernels",
    "gemma-vision-layers",
    "gemma-vision-preprocess",
    "gemma-vision-hub",
    "gemma-vision-encoder",
];
const MODEL: &str = "crates/vision/tests/fixtures/tiny-clipped/model";
const IMAGE: &str = "crates/vision/tests/fixtures/tiny-clipped/images/noise-20x30.png";

const MAIN: &str = r#"//! Encodes one image with the `vision` crate and saves its features.
use vision::{EncoderOptions, VisionEncoder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let [model, image, out] = <[String; 3]>::try_from(std::env::args().skip(1).collect::<Vec<_>>())
        .map_err(|_| "usage: downstream MODEL IMAGE OUT")?;
    let encoder = VisionEncoder::load(&model, EncoderOptions::default())?;
    let features = encoder.encode_files(&[&image], None)?;
    tensor::save_safetensors(&out, &[("features", &features.features)], None)?;
    println!("{:?} {} on MLX {}", features.features.shape(), features.features.dtype(), tensor::info::mlx_version()?);
    Ok(())
}
"#;

/// `cargo xtask package`: setup, the `gemma-vision` command (the downstream run's reference),
/// every crate packaged and unpacked, the downstream crate built and run on them.
pub fn package_command() -> Result<()> {
    crate::setup::main()?;
    run(project::cargo().args(["build", "-p", "gemma-vision", "--bin", "gemma-vision"]))?;
    let packaged = crate::package::package()?;
    main(&target_dir().join("debug").join("gemma-vision"), &packaged)
}

pub fn main(gemma_vision: &Path, packaged: &Packaged) -> Result<()> {
    let scratch = std::env::temp_dir().join(format!("gemma-vision-downstream-{}", std::process::id()));
    let result = build_and_run(&scratch, gemma_vision, packaged);
    let _ = fs::remove_dir_all(&scratch);
    result
}

fn build_and_run(scratch: &Path, gemma_vision: &Path, packaged: &Packaged) -> Result<()> {
    eprintln!("downstream: a new crate depending on the packaged `gemma-vision-encoder`, in {}", scratch.display());
    let project = scratch.join("downstream");
    fs::create_dir_all(project.join("src")).map_err(|e| e.to_string())?;
    fs::write(project.join("Cargo.toml"), manifest(packaged)?).map_err(|e| e.to_string())?;
    fs::copy(root().join("Cargo.lock"), project.join("Cargo.lock")).map_err(|e| e.to_string())?;
    fs::write(project.join("src/main.rs"), MAIN).map_err(|e| e.to_string())?;

    // The workspace's target directory: the registry crates built with the workspace's profiles
    // and versions are reused; the packaged crates, being other packages, are built anew.
    let target = target_dir();
    let mut build = user_command(project::cargo_program());
    build.args(["build", "--manifest-path"]).arg(project.join("Cargo.toml")).env("CARGO_TARGET_DIR", &target);
    run(build)?;

    let ours = scratch.join("downstream.safetensors");
    let mut program = user_command(target.join("debug/downstream"));
    program.arg(root().join(MODEL)).arg(root().join(IMAGE)).arg(&ours);
    run(program)?;
    let reference = scratch.join("gemma-vision.safetensors");
    run(cmd(gemma_vision, &["encode", "--model", MODEL, "--image", IMAGE, "--out"]).arg(&reference))?;
    let (a, b) = (tensor_bytes(&ours, "features")?, tensor_bytes(&reference, "features")?);
    if a != b {
        return Err("downstream: the crate's features differ from `gemma-vision encode`'s".into());
    }
    eprintln!("downstream: built and ran with nothing set; its features are gemma-vision's bits");
    Ok(())
}

/// The downstream crate's manifest: the README's dependency lines, the packaged crates patched
/// in for crates.io's, and the workspace's profiles.
fn manifest(packaged: &Packaged) -> Result<String> {
    let mut patches = String::new();
    for name in CRATES {
        patches.push_str(&format!("{name} = {{ path = {:?} }}\n", packaged.dir(name)?.display().to_string()));
    }
    Ok(format!(
        "[package]\nname = \"downstream\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\n{}\n\n\
         [patch.crates-io]\n{patches}\n{}\n[workspace]\n",
        dependency_lines()?,
        workspace_profiles()?
    ))
}

/// The README's dependency lines (its "Use as a dependency" section).
fn dependency_lines() -> Result<String> {
    let readme = fs::read_to_string(root().join("README.md")).map_err(|e| e.to_string())?;
    let section = readme.split("## Use as a dependency").nth(1).ok_or("README.md has no \"Use as a dependency\"")?;
    let block = section.split("```toml").nth(1).and_then(|b| b.split("```").next()).ok_or("no ```toml block there")?;
    let lines: Vec<&str> = block.lines().filter(|l| l.starts_with("vision = ") || l.starts_with("tensor = ")).collect();
    if lines.is_empty() {
        return Err("the README's toml block names no `vision = …` dependency".into());
    }
    Ok(lines.join("\n"))
}

/// The `[profile.*]` sections of the workspace manifest.
fn workspace_profiles() -> Result<String> {
    let workspace = fs::read_to_string(root().join("Cargo.toml")).map_err(|e| e.to_string())?;
    let mut profiles = String::new();
    let mut inside = false;
    for line in workspace.lines() {
        if line.starts_with('[') {
            inside = line.starts_with("[profile.");
        }
        if inside {
            profiles.push_str(line);
            profiles.push('\n');
        }
    }
    Ok(profiles)
}

/// `program` in a user's shell: the project's Python environment activated, nothing of MLX set.
fn user_command(program: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
    let venv = deps().join("venv");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(venv.join("bin")).chain(std::env::split_paths(&path))).unwrap_or(path);
    let mut command = std::process::Command::new(program);
    command
        .current_dir(root())
        .env("VIRTUAL_ENV", &venv)
        .env("PATH", path)
        .env_remove("MLX_DIR")
        .env_remove("MLX_C_DIR")
        .env_remove("LD_LIBRARY_PATH");
    command
}

/// The bytes of tensor `name` in a safetensors file.
fn tensor_bytes(path: &Path, name: &str) -> Result<Vec<u8>> {
    let data = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let fail = || format!("{}: not a safetensors file with `{name}`", path.display());
    let len = usize::try_from(u64::from_le_bytes(data.get(..8).ok_or_else(fail)?.try_into().map_err(|_| fail())?))
        .map_err(|_| fail())?;
    let header: serde_json::Value =
        serde_json::from_slice(data.get(8..8 + len).ok_or_else(fail)?).map_err(|_| fail())?;
    let offsets = header[name]["data_offsets"].as_array().ok_or_else(fail)?;
    let (begin, end) = (offsets[0].as_u64().ok_or_else(fail)? as usize, offsets[1].as_u64().ok_or_else(fail)? as usize);
    Ok(data.get(8 + len + begin..8 + len + end).ok_or_else(fail)?.to_vec())
}
