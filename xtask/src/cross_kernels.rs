//! The `kernels` crate cross-built for aarch64 Linux and run under `qemu-aarch64` (a step of
//! `cargo xtask emulate`): its own test suite, then the example
//! `crates/kernels/examples/cpu_arithmetic.rs` on `cpu_arithmetic.py`'s op list, natively and
//! under emulation, each platform's outputs against stock MLX's there.
//!
//! The Rust standard library for [`TARGET`] comes from `rustup target add` (idempotent); the
//! linker is Debian's `gcc-aarch64-linux-gnu`. Programs run against the same arm64 userland as
//! the stock side (`.deps/aarch64/sysroot`: bookworm's glibc, whose `tanhf` and `powf` the
//! kernels call as MLX does). `kernels` links no MLX, so nothing else is needed.

use crate::setup;
use project::{Result, cargo, cmd, oracle_python, run, target_dir};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The Rust target of the emulated side.
pub const TARGET: &str = project::stack::AARCH64_LINUX;

/// The example that computes the op list with the kernels.
const EXAMPLE: &str = "cpu_arithmetic";

/// The emulated machine: `qemu-aarch64` and the arm64 userland it loads programs against.
pub struct Emulator<'a> {
    pub qemu: &'a Path,
    pub sysroot: &'a Path,
}

/// One row group of the table: its label, the stock MLX outputs it is compared with (`.npz`),
/// whether the example runs under emulation, and whether it runs the portable loops
/// (`KERNELS_PORTABLE`) instead of the CPU's SIMD path (AVX2 or AVX-512 on x86-64, NEON on
/// aarch64).
pub struct Platform<'a> {
    pub label: &'a str,
    pub mlx: &'a Path,
    pub emulated: bool,
    pub portable: bool,
}

/// The toolchain pieces the cross builds need, installed if missing: the Rust target, and
/// Debian's cross gcc (the linker) and g++ (mlx-c's compiler, MLX's emulated CPU JIT).
pub fn ensure_toolchain() -> Result<()> {
    run(cmd("rustup", &["target", "add", TARGET]))?;
    setup::debian_packages(&["gcc-aarch64-linux-gnu", "g++-aarch64-linux-gnu"])
}

/// `cargo` for [`TARGET`]: release (the tests run under emulation), linked by the cross gcc,
/// its test binaries run by `emulator`.
fn cross_cargo(emulator: &Emulator<'_>, args: &[&str]) -> Command {
    let mut command = cargo();
    command.args(args).args(["-p", "gemma-vision-kernels", "--release", "--target", TARGET]);
    command.env("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER", "aarch64-linux-gnu-gcc").env(
        "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER",
        format!("{} -L {}", emulator.qemu.display(), emulator.sysroot.display()),
    );
    command
}

/// `cargo test -p gemma-vision-kernels` for [`TARGET`] under emulation; returns the seconds
/// it took (build included).
pub fn test_under_emulation(emulator: &Emulator<'_>) -> Result<f64> {
    let started = Instant::now();
    run(cross_cargo(emulator, &["test"]))?;
    Ok(started.elapsed().as_secs_f64())
}

/// The example run on every platform, then `cpu_arithmetic.py kernels`: the table of our bits
/// against stock MLX's, op by op; an error unless every row is identical. `inputs` is the op
/// list's inputs (`.npz`), `work` a directory for the exported arrays and our outputs.
pub fn compare_op_list(emulator: &Emulator<'_>, inputs: &Path, platforms: &[Platform<'_>], work: &Path) -> Result<()> {
    let script = project::root().join("crates/parity/python/cpu_arithmetic.py");
    let export = |npz: &Path, dir: &Path| run(oracle_python(&script).arg("export").arg(npz).arg(dir));
    // The native example in the dev profile (`cargo test` built it already), the emulated one
    // in release (so did the emulated `cargo test`): float arithmetic is the same in both.
    run(cargo().args(["build", "-p", "gemma-vision-kernels", "--example", EXAMPLE]))?;
    run(cross_cargo(emulator, &["build", "--example", EXAMPLE]))?;
    let inputs_dir = work.join("inputs");
    export(inputs, &inputs_dir)?;
    let mut table = oracle_python(&script);
    table.arg("kernels");
    for platform in platforms {
        let mlx_dir = work.join(format!("mlx-{}", platform.label));
        let ours = work.join(format!("ours-{}", platform.label));
        export(platform.mlx, &mlx_dir)?;
        let started = Instant::now();
        let mut example = if platform.emulated {
            let mut c = cmd(emulator.qemu, &["-L"]);
            c.arg(emulator.sysroot).arg(target_dir().join(TARGET).join("release/examples").join(EXAMPLE));
            c
        } else {
            cmd(target_dir().join("debug/examples").join(EXAMPLE), &[])
        };
        if platform.portable {
            example.env("KERNELS_PORTABLE", "1");
        }
        run(example.arg(&inputs_dir).arg(&mlx_dir).arg(&ours))?;
        eprintln!("emulate: our kernels on {} in {:.1} s", platform.label, started.elapsed().as_secs_f64());
        table.args(["--platform", platform.label]).arg(&ours).arg(platform.mlx);
    }
    run(table)
}
