//! `cargo xtask emulate`: stock MLX's CPU arithmetic on aarch64 Linux, under `qemu-aarch64`
//! user emulation, against the same release on this x86-64 machine.
//!
//! The aarch64 side is what a user there installs: the reference (`xtask/python-reference.txt`,
//! mlx-vlm and the MLX wheels) as pip resolves it for aarch64 Linux, as wheels only, pinned to
//! the versions of `.deps/venv/reference.lock` where an aarch64 wheel of them exists, run by
//! Debian bookworm's arm64 CPython 3.11, all unpacked into `.deps/aarch64/` by
//! `crates/parity/python/aarch64_sysroot.py` from the registries. Both sides evaluate
//! `crates/parity/python/cpu_arithmetic.py`'s op list on the same input bytes, with MLX's CPU
//! JIT off on both (no C++ compiler on `PATH`: the op list is the primitives run one by one;
//! the encoder step below also runs with it on) and each its own JIT cache directory (MLX
//! keys the cache by kernel name, not by architecture). The table says, per op and dtype,
//! whether the bits agree; the run fails unless the arithmetic model the host kernels build on
//! (a k-ordered sum with separate rounding on x86-64, with fused multiply-adds on aarch64)
//! reproduces both platforms' float32 products exactly.
//!
//! Then our side ([`cross_kernels`]): the `kernels` crate cross-built for
//! `aarch64-unknown-linux-gnu` (its standard library from `rustup target add`, Debian's
//! `gcc-aarch64-linux-gnu` as the linker), its test suite run under `qemu-aarch64`, and its
//! kernels run on the same op list natively and under emulation, each platform's bits against
//! stock MLX's there, once with the CPU's SIMD path (AVX2 or AVX-512; NEON) and once with the
//! portable loops (`KERNELS_PORTABLE`): a table; the run fails unless every row is identical.
//!
//! Then both encoders ([`emulated_parity`]): the whole stack cross-built (mlx-c by Debian's
//! `aarch64-linux-gnu-g++`), stock aarch64 mlx-vlm against it at small shapes, MLX's CPU JIT
//! off and on, with MLX's ops and with the host kernels.
//!
//! Last, the decoders whose bits come from C libraries ([`emulated_decoders`]: OpenJPEG, Little
//! CMS), ours cross-built against the aarch64 wheels' Pillow, file by file.

use crate::cross_kernels::{self, Emulator, Platform};
use crate::setup;
use crate::{emulated_decoders, emulated_parity};
use project::{Result, cmd, deps, oracle_python, python, root, run, work_dir};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub fn main() -> Result<()> {
    let started = Instant::now();
    setup::main()?;
    let (qemu, aarch64) = aarch64_userland()?;
    let script = |name: &str| root().join("crates/parity/python").join(name);

    let work = work_dir("emulation")?;
    let arithmetic = script("cpu_arithmetic.py");
    let (inputs, x86, arm) = (work.join("inputs.npz"), work.join("x86_64.npz"), work.join("aarch64.npz"));
    run(oracle_python(&arithmetic).args(["inputs", "--out"]).arg(&inputs))?;
    let side = |label: &str| -> Result<std::process::Command> {
        let tmp = work.join(format!("tmp-{label}"));
        std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let mut command = match label {
            "aarch64" => {
                let sysroot = aarch64.join("sysroot");
                let mut c = cmd(&qemu, &["-L"]);
                c.arg(&sysroot).arg(sysroot.join("usr/bin/python3.11")).env("PYTHONPATH", aarch64.join("site"));
                c
            }
            _ => cmd(python(), &[]),
        };
        // No compiler on PATH: MLX's CPU JIT off. Its cache under TMPDIR, one per platform.
        command.env("PATH", "/nonexistent").env("TMPDIR", &tmp).current_dir(root());
        Ok(command)
    };
    let timed = |label: &str, out: &Path| -> Result<f64> {
        let t = Instant::now();
        run(side(label)?.arg(&arithmetic).args(["run", "--inputs"]).arg(&inputs).arg("--out").arg(out))?;
        Ok(t.elapsed().as_secs_f64())
    };
    let x86_seconds = timed("x86_64", &x86)?;
    let arm_seconds = timed("aarch64", &arm)?;
    eprintln!("emulate: op list in {x86_seconds:.1} s natively, {arm_seconds:.1} s under qemu-aarch64");
    run(oracle_python(&arithmetic).arg("compare").arg(&x86).arg(&arm).arg("--inputs").arg(&inputs))?;

    cross_kernels::ensure_toolchain()?;
    let sysroot = aarch64.join("sysroot");
    let emulator = Emulator { qemu: &qemu, sysroot: &sysroot };
    let test_seconds = cross_kernels::test_under_emulation(&emulator)?;
    eprintln!("emulate: kernels' tests for {} in {test_seconds:.1} s (build and qemu)", cross_kernels::TARGET);
    let platforms = [
        Platform { label: "x86-64", mlx: &x86, emulated: false, portable: false },
        Platform { label: "x86-64-portable", mlx: &x86, emulated: false, portable: true },
        Platform { label: "aarch64", mlx: &arm, emulated: true, portable: false },
        Platform { label: "aarch64-portable", mlx: &arm, emulated: true, portable: true },
    ];
    cross_kernels::compare_op_list(&emulator, &inputs, &platforms, &work)?;
    emulated_parity::main(&qemu, &aarch64)?;
    emulated_decoders::main(&qemu, &aarch64)?;
    eprintln!("emulate: done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// `qemu-aarch64` (Debian's `qemu-user`, installed if missing) and `.deps/aarch64`, the arm64
/// userland and the aarch64 reference that `aarch64_sysroot.py` unpacks there (at once when its
/// stamp matches the request). Setup has run.
pub fn aarch64_userland() -> Result<(PathBuf, PathBuf)> {
    setup::debian_packages(&["qemu-user"])?;
    let qemu = setup::which("qemu-aarch64").ok_or("qemu-aarch64 not found (Debian package qemu-user)")?;
    let aarch64 = deps().join("aarch64");
    let mut sysroot = oracle_python(&root().join("crates/parity/python/aarch64_sysroot.py"));
    sysroot.arg("--root").arg(&aarch64);
    sysroot.arg("--requirements").arg(root().join("xtask/python-reference.txt"));
    run(sysroot.arg("--constraints").arg(setup::reference_lock()))?;
    Ok((qemu, aarch64))
}
