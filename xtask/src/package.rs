//! `cargo xtask package`: every published crate packaged as crates.io would receive it, each
//! `.crate` unpacked and checked to carry both licence texts, and the downstream crate
//! (`downstream.rs`) built and run against the unpacked crates, not the working tree: what a
//! user of the published crates builds.
//!
//! `cargo package --no-verify` packages the crates in one call, in dependency order, resolving
//! the workspace crates not yet on crates.io through cargo's local overlay registry; the build
//! that verifies them is the downstream build, which reaches them through `[patch.crates-io]`
//! (they are not on crates.io yet) and shares this workspace's target directory and lock file,
//! so that the dependencies they share with the workspace build are built once.

use project::{Result, cargo, cmd, run, target_dir};
use std::fs;
use std::path::{Path, PathBuf};

/// Every published crate: its directory under `crates/` and its package name, in dependency
/// order (each after the crates it depends on).
pub const PUBLISHED: &[(&str, &str)] = &[
    ("mlx-ffi", "gemma-vision-mlx-ffi"),
    ("kernels", "gemma-vision-kernels"),
    ("tensor", "gemma-vision-tensor"),
    ("layers", "gemma-vision-layers"),
    ("preprocess", "gemma-vision-preprocess"),
    ("hub", "gemma-vision-hub"),
    ("vision", "gemma-vision-encoder"),
    ("embed", "gemma-vision-embed"),
    ("cli", "gemma-vision"),
];

/// The library crates among them (the ones `cargo doc` documents).
pub const LIBRARIES: &[&str] = &[
    "gemma-vision-mlx-ffi",
    "gemma-vision-kernels",
    "gemma-vision-tensor",
    "gemma-vision-layers",
    "gemma-vision-preprocess",
    "gemma-vision-hub",
    "gemma-vision-encoder",
    "gemma-vision-embed",
];

/// The unpacked `.crate`s: package name → its directory.
#[derive(Debug)]
pub struct Packaged {
    pub crates: Vec<(String, PathBuf)>,
}

impl Packaged {
    /// The unpacked directory of `package`.
    pub fn dir(&self, package: &str) -> Result<&Path> {
        self.crates
            .iter()
            .find(|(name, _)| name == package)
            .map(|(_, dir)| dir.as_path())
            .ok_or_else(|| format!("{package} was not packaged"))
    }
}

/// Packages every crate of [`PUBLISHED`] into `target/package/` (`cargo package --no-verify`,
/// uncommitted changes included) and unpacks each into `target/packaged/<name>-<version>/`.
pub fn package() -> Result<Packaged> {
    let mut command = cargo();
    command.args(["package", "--no-verify", "--allow-dirty"]);
    for (_, name) in PUBLISHED {
        command.args(["-p", name]);
    }
    run(command)?;
    let archives = target_dir().join("package");
    let unpacked = target_dir().join("packaged");
    let _ = fs::remove_dir_all(&unpacked);
    fs::create_dir_all(&unpacked).map_err(|e| format!("{}: {e}", unpacked.display()))?;
    let version = workspace_version()?;
    let mut crates = Vec::new();
    for (_, name) in PUBLISHED {
        let archive = archives.join(format!("{name}-{version}.crate"));
        run(cmd("tar", &["-xzf"]).arg(&archive).arg("-C").arg(&unpacked))?;
        let dir = unpacked.join(format!("{name}-{version}"));
        if !dir.join("Cargo.toml").is_file() {
            return Err(format!("{} unpacked without {}/Cargo.toml", archive.display(), dir.display()));
        }
        carries_the_licences(&archive, &dir)?;
        crates.push(((*name).to_owned(), dir));
    }
    eprintln!("package: {} crates packaged and unpacked into {}", crates.len(), unpacked.display());
    Ok(Packaged { crates })
}

/// The licence texts every published crate carries (`license = "MIT OR Apache-2.0"`): each
/// crate's directory links them from the root, and cargo packages a link as the file it names.
const LICENCES: &[&str] = &["LICENSE-MIT", "LICENSE-APACHE"];

/// An error unless the crate unpacked into `dir` holds the root's [`LICENCES`], byte for byte.
fn carries_the_licences(archive: &Path, dir: &Path) -> Result<()> {
    for licence in LICENCES {
        let root_text = fs::read(project::root().join(licence)).map_err(|e| format!("{licence}: {e}"))?;
        if fs::read(dir.join(licence)).ok() != Some(root_text) {
            return Err(format!(
                "{} does not carry the root's {licence}: link it into the crate's directory \
                 (`ln -s ../../{licence}`)",
                archive.display()
            ));
        }
    }
    Ok(())
}

/// `RUSTDOCFLAGS="-D warnings" cargo doc --no-deps` of every library crate: broken links and
/// malformed docs fail.
pub fn docs() -> Result<()> {
    let mut command = cargo();
    command.args(["doc", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings");
    for name in LIBRARIES {
        command.args(["-p", name]);
    }
    run(command)
}

/// `version` of `[workspace.package]` in the root manifest.
fn workspace_version() -> Result<String> {
    let manifest = fs::read_to_string(project::root().join("Cargo.toml")).map_err(|e| e.to_string())?;
    let section = manifest.split("[workspace.package]").nth(1).ok_or("Cargo.toml has no [workspace.package]")?;
    section
        .lines()
        .take_while(|line| !line.starts_with('['))
        .find_map(|line| line.strip_prefix("version = "))
        .map(|value| value.trim().trim_matches('"').to_owned())
        .ok_or_else(|| "[workspace.package] has no version".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packaged_crate_must_carry_both_licence_texts_as_the_root_has_them() {
        let dir = std::env::temp_dir().join(format!("xtask-licences-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let archive = Path::new("example-0.1.0.crate");
        let root = project::root();
        let missing = carries_the_licences(archive, &dir).unwrap_err();
        assert!(missing.contains("LICENSE-MIT") && missing.contains("ln -s"), "{missing}");
        for licence in LICENCES {
            fs::copy(root.join(licence), dir.join(licence)).unwrap();
        }
        let carried = carries_the_licences(archive, &dir);
        fs::write(dir.join("LICENSE-APACHE"), "another text").unwrap();
        let altered = carries_the_licences(archive, &dir).unwrap_err();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(carried, Ok(()));
        assert!(altered.contains("LICENSE-APACHE"), "{altered}");
    }
}
