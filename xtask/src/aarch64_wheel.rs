//! The Linux aarch64 wheel (a step of `cargo xtask wheels`, and so of `cargo xtask test`): the
//! `cp311-abi3` wheel cross-built for `aarch64-unknown-linux-gnu`, then installed and run under
//! `qemu-aarch64` as a user of an aarch64 Linux machine (Graviton, Ampere) installs it.
//!
//! The build is `cargo xtask emulate`'s cross build ([`Stack::emulated_aarch64`]: its target
//! directory, `MLX_DIR` the aarch64 `mlx` package, Debian's cross gcc as the linker and its g++
//! for mlx-c; [`emulated_parity::PROFILE`] with [`emulated_parity::PROFILE_OVERRIDE`]) driven by
//! maturin for the userland's CPython, so it reuses what that step built. maturin tags it
//! `manylinux_2_35_aarch64` (pyproject.toml's `compatibility`) after checking the extension's
//! symbol versions against that policy; the tag must be the aarch64 MLX wheels' own.
//!
//! The install: a fresh virtual environment of Debian bookworm's arm64 CPython
//! (`.deps/aarch64/sysroot`) with the aarch64 reference (mlx-vlm 0.7.10 and the MLX wheels,
//! `.deps/aarch64/site`) on its path, the packages the wheel goes beside. pip, run by that
//! CPython under emulation with nothing on `PATH` (no compiler, no cargo; MLX's CPU JIT off),
//! installs the wheel file offline and binary only, so its own tag check on bookworm's glibc
//! decides; what the wheel requires beyond the reference comes from `.deps/wheels-aarch64`,
//! which this machine's pip fills for that CPython on the userland's platforms (pinned to the
//! site's versions; each file fetched once, kept). Then `crates/python/tests/wheel_smoke.py`
//! runs there: our encode of an image against stock aarch64 mlx-vlm's `encode_image` on the
//! same random checkpoint, bit for bit, and `accelerate` on mlx-vlm's model.

use crate::emulated_parity::{PROFILE, PROFILE_OVERRIDE};
use crate::{cross_kernels, emulation, wheels};
use project::stack::Stack;
use project::{Result, cmd, deps, python, root, run, target_dir};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Builds the aarch64 wheel and smoke-tests it under emulation; prints one line of timings.
pub fn main() -> Result<()> {
    let started = Instant::now();
    let (qemu, aarch64) = emulation::aarch64_userland()?;
    cross_kernels::ensure_toolchain()?;
    let stack = Stack::emulated_aarch64(&qemu, &aarch64, None);
    let wheel = build(&stack)?;
    check_tag(&wheel, &aarch64)?;
    let built = started.elapsed().as_secs_f64();
    let venv = target_dir().join("wheel-smoke-venv-aarch64");
    let result = smoke(&stack, &aarch64, &venv, &wheel);
    let _ = fs::remove_dir_all(&venv);
    let (resolved, installed, smoked) = result?;
    eprintln!(
        "wheels: {} under qemu-aarch64, no build tool on PATH: setup and cross build {built:.0} s, resolved in \
         {resolved:.0} s, installed in {installed:.0} s, smoke test {smoked:.0} s",
        wheels::describe(&wheel),
    );
    Ok(())
}

/// `python3.11`: the name of the userland's interpreter, which maturin takes as the CPython to
/// build for.
fn interpreter_name(stack: &Stack) -> Result<&str> {
    stack
        .python
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| format!("{}: not an interpreter's name", stack.python.display()))
}

/// The wheel, built by maturin into `target/python-wheels-aarch64` (emptied first).
fn build(stack: &Stack) -> Result<PathBuf> {
    let emulation = stack.emulation.as_ref().ok_or("the aarch64 wheel needs the emulated stack")?;
    let out = target_dir().join("python-wheels-aarch64");
    let _ = fs::remove_dir_all(&out);
    let mut build = cmd(python(), &["-m", "maturin", "build", "--manifest-path", "crates/python/Cargo.toml"]);
    build.args(["--target", emulation.target, "--profile", PROFILE.0, "--config", PROFILE_OVERRIDE]);
    build.args(["--interpreter", interpreter_name(stack)?]).arg("--out").arg(&out);
    stack.build_environment(&mut build);
    run(&mut build)?;
    wheels::built_wheel(&out)
}

/// An error unless the wheel's platform tag is the one of the aarch64 `mlx-cpu` wheel in the
/// site (`Tag:` of its `WHEEL` file): the wheel goes beside it and needs no newer glibc.
fn check_tag(wheel: &Path, aarch64: &Path) -> Result<()> {
    let site = aarch64.join("site");
    let metadata = fs::read_dir(&site)
        .map_err(|e| format!("{}: {e}", site.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|path| path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("mlx_cpu-")))
        .map(|dist_info| dist_info.join("WHEEL"))
        .ok_or_else(|| format!("no mlx_cpu-*.dist-info in {}", site.display()))?;
    let text = fs::read_to_string(&metadata).map_err(|e| format!("{}: {e}", metadata.display()))?;
    let mlx_platform = text
        .lines()
        .find_map(|line| line.strip_prefix("Tag: "))
        .and_then(|tag| tag.trim().rsplit('-').next())
        .ok_or_else(|| format!("{}: no `Tag:`", metadata.display()))?;
    let name = wheel.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let ours = name.strip_suffix(".whl").and_then(|stem| stem.rsplit('-').next()).unwrap_or_default();
    if ours == mlx_platform {
        Ok(())
    } else {
        Err(format!("{name} is tagged {ours}; the aarch64 MLX wheels it installs beside are {mlx_platform}"))
    }
}

/// The fresh environment at `venv`, the wheel installed into it by the emulated pip, and the
/// smoke test run there; returns the seconds to resolve, install and run.
fn smoke(stack: &Stack, aarch64: &Path, venv: &Path, wheel: &Path) -> Result<(f64, f64, f64)> {
    let emulation = stack.emulation.as_ref().ok_or("the aarch64 wheel needs the emulated stack")?;
    fs::create_dir_all(&emulation.tmp).map_err(|e| format!("{}: {e}", emulation.tmp.display()))?;
    let _ = fs::remove_dir_all(venv);
    let started = Instant::now();
    let (house, pip) = wheelhouse(stack, aarch64, wheel)?;
    let resolved = started.elapsed().as_secs_f64();

    run(stack.reference_python().args(["-m", "venv", "--without-pip"]).arg(venv))?;
    let in_venv = Stack { python: venv.join("bin/python"), ..stack.clone() };
    let mut install = in_venv.reference(&pip.join("pip"));
    install.args(["install", "-q", "--disable-pip-version-check", "--no-index", "--only-binary", ":all:"]);
    run(install.arg("--find-links").arg(&house).arg(wheel))?;
    let installed = started.elapsed().as_secs_f64();

    run(&mut in_venv.reference(&root().join("crates/python/tests/wheel_smoke.py")))?;
    Ok((resolved, installed - resolved, started.elapsed().as_secs_f64() - installed))
}

/// `.deps/wheels-aarch64` holding what `wheel` requires, and pip, resolved by this machine's
/// pip against the index for the userland's CPython on the platforms its glibc accepts (the
/// userland's stamp lists them), pinned to the site's versions (`site.lock`); returns the
/// directory and the newest pip wheel in it.
fn wheelhouse(stack: &Stack, aarch64: &Path, wheel: &Path) -> Result<(PathBuf, PathBuf)> {
    let house = deps().join("wheels-aarch64");
    fs::create_dir_all(&house).map_err(|e| format!("creating {}: {e}", house.display()))?;
    let version = interpreter_name(stack)?.trim_start_matches("python");
    let abi = format!("cp{}", version.replace('.', ""));
    let mut download = cmd(python(), &["-m", "pip", "download", "-q", "--disable-pip-version-check"]);
    download.args(["--only-binary", ":all:", "--implementation", "cp", "--python-version", version, "--abi", &abi]);
    for platform in userland_platforms(aarch64)? {
        download.args(["--platform", &platform]);
    }
    download.arg("-c").arg(aarch64.join("site.lock"));
    run(download.arg("--find-links").arg(&house).arg("--dest").arg(&house).arg(wheel).arg("pip"))?;
    wheels::forget_our_wheels(&house)?;
    let pip = newest_pip(&house)?;
    Ok((house, pip))
}

/// The wheel platforms the userland's glibc accepts, as `aarch64_sysroot.py` recorded them in
/// its stamp.
fn userland_platforms(aarch64: &Path) -> Result<Vec<String>> {
    let stamp = aarch64.join("stamp");
    let text = fs::read_to_string(&stamp).map_err(|e| format!("{}: {e}", stamp.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", stamp.display()))?;
    let platforms: Option<Vec<String>> = json["request"]["platforms"]
        .as_array()
        .map(|list| list.iter().filter_map(|p| p.as_str().map(str::to_owned)).collect());
    platforms.filter(|list| !list.is_empty()).ok_or_else(|| format!("{}: no request.platforms", stamp.display()))
}

/// The pip wheel of the highest version in `house` (`pip-<version>-py3-none-any.whl`).
fn newest_pip(house: &Path) -> Result<PathBuf> {
    let version = |path: &Path| -> Option<Vec<u32>> {
        let name = path.file_name()?.to_str()?;
        let version = name.strip_prefix("pip-")?.split('-').next()?;
        version.split('.').map(|part| part.parse().ok()).collect()
    };
    fs::read_dir(house)
        .map_err(|e| format!("{}: {e}", house.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter_map(|path| Some((version(&path)?, path)))
        .max()
        .map(|(_, path)| path)
        .ok_or_else(|| format!("no pip wheel in {}", house.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-aarch64-wheel-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_wheel_must_carry_the_aarch64_mlx_wheels_platform_tag() {
        let aarch64 = scratch("tag");
        let dist_info = aarch64.join("site/mlx_cpu-0.32.4.dist-info");
        fs::create_dir_all(&dist_info).unwrap();
        fs::write(dist_info.join("WHEEL"), "Wheel-Version: 1.0\nTag: py3-none-manylinux_2_35_aarch64\n").unwrap();
        let same = check_tag(Path::new("gemma_vision-0.1.0-cp311-abi3-manylinux_2_35_aarch64.whl"), &aarch64);
        let newer = check_tag(Path::new("gemma_vision-0.1.0-cp311-abi3-manylinux_2_39_aarch64.whl"), &aarch64);
        let x86 = check_tag(Path::new("gemma_vision-0.1.0-cp311-abi3-manylinux_2_35_x86_64.whl"), &aarch64);
        fs::remove_dir_all(&aarch64).unwrap();
        assert_eq!(same, Ok(()));
        assert!(newer.is_err_and(|e| e.contains("manylinux_2_39_aarch64") && e.contains("manylinux_2_35_aarch64")));
        assert!(x86.is_err());
    }

    #[test]
    fn the_newest_pip_wheel_is_taken_by_version_not_by_name() {
        let house = scratch("pip");
        for name in ["pip-9.0.3-py2.py3-none-any.whl", "pip-26.3-py3-none-any.whl", "pip-23.2.1-py3-none-any.whl"] {
            fs::write(house.join(name), "").unwrap();
        }
        fs::write(house.join("pipx-99.0-py3-none-any.whl"), "").unwrap();
        let newest = newest_pip(&house);
        fs::remove_dir_all(&house).unwrap();
        assert_eq!(newest.unwrap().file_name().unwrap(), "pip-26.3-py3-none-any.whl");
    }
}
