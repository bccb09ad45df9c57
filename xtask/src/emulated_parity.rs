//! Both encoders' parity at small shapes on aarch64 Linux, under `qemu-aarch64` (the last step
//! of `cargo xtask emulate`): stock aarch64 mlx-vlm against our encoder stack cross-built for
//! `aarch64-unknown-linux-gnu`.
//!
//! The reference side is mlx-vlm as a user there installs it (`.deps/aarch64/site`: the aarch64
//! wheels of `xtask/python-reference.txt`, pinned to the x86-64 reference's lock) run by
//! Debian's arm64 CPython. Ours is `parity-vision` and `parity-ops` cross-built in the dev
//! profile (it shares its build scripts and proc macros with `cargo test`'s build, and the
//! `kernels` crate alone is optimised: the host kernels run under emulation), mlx-c compiled
//! by Debian's `aarch64-linux-gnu-g++` against the aarch64 `mlx` package's headers, and run
//! under `qemu-aarch64` on that package's libmlx. [`Stack::emulated_aarch64`] holds both sides.
//!
//! Runs, each a table (the run fails unless every row is bit-exact):
//! - MLX's CPU JIT off (no `g++` on `PATH`, as on a machine without a C++ compiler):
//!   `vision.py --quick` once, then `parity-vision` with `--kernels mlx` (MLX's own ops) and
//!   with `--kernels host` (the host kernels forced, whatever `layers::HostParity` says: the
//!   proof behind the aarch64 entry of `layers::PROVEN_MLX`); `ops.py --small` and
//!   `parity-ops`, whose rows cover both executions.
//! - MLX's CPU JIT on (`g++` on `PATH` is Debian's `aarch64-linux-gnu-g++`, the GCC release an
//!   arm64 bookworm machine's `g++` is, so the JIT builds the kernels an aarch64 user's builds,
//!   its float32 GELU with the cubic term contracted to one fused multiply-add):
//!   `vision.py --quick`, then `parity-vision` with `--kernels auto` (the host kernels where
//!   `layers::HostParity` proves them) and with `--kernels host` (forced: the proof that the
//!   aarch64 entry of `layers::PROVEN_MLX` holds with the JIT on, the host GELU following
//!   `layers::gelu_cubic_term`).
//!
//! The summary line gives each run's rows and seconds, the reference sides' and the cross
//! build's seconds, and the step's.

use crate::parity::{our_side, reference_side};
use crate::setup;
use project::stack::Stack;
use project::{Result, run, target_dir};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The cross compiler the mlx-c build and MLX's emulated CPU JIT use.
const CROSS_GXX: &str = "aarch64-linux-gnu-g++";

/// The cargo profile our side is built in, and its directory under the target's.
pub const PROFILE: (&str, &str) = ("dev", "debug");

/// What the cross build changes in that profile (`cargo --config`): the `kernels` crate
/// optimised, as the host kernels run under emulation. Every aarch64 build of the stack passes
/// it (the wheel's too), so that they share their dependencies' builds.
pub const PROFILE_OVERRIDE: &str = "profile.dev.package.gemma-vision-kernels.opt-level=3";

/// One run's result: its label, (bit-exact rows, rows), and the seconds our side took.
struct Outcome {
    label: &'static str,
    counts: (usize, usize),
    seconds: f64,
}

/// Builds our side, runs both JIT settings, prints every table and one summary line; an
/// error unless every row is bit-exact. `qemu` is `qemu-aarch64`, `aarch64` the directory
/// `aarch64_sysroot.py` filled; the cross toolchain is installed
/// (`cross_kernels::ensure_toolchain`).
pub fn main(qemu: &Path, aarch64: &Path) -> Result<()> {
    let started = Instant::now();
    let jit_off = Stack::emulated_aarch64(qemu, aarch64, None);
    let jit_bin = jit_compiler_dir()?;
    let jit_on = Stack::emulated_aarch64(qemu, aarch64, Some(&jit_bin));
    for stack in [&jit_off, &jit_on] {
        if let Some(emulation) = &stack.emulation {
            std::fs::create_dir_all(&emulation.tmp).map_err(|e| format!("{}: {e}", emulation.tmp.display()))?;
        }
    }

    let build_started = Instant::now();
    eprintln!("emulate: building parity-vision and parity-ops for aarch64 ({} profile)", PROFILE.0);
    let mut cargo = jit_off.cargo();
    cargo.args(["--config", PROFILE_OVERRIDE]);
    run(cargo.args([
        "build",
        "--profile",
        PROFILE.0,
        "-p",
        "parity",
        "--bin",
        "parity-vision",
        "--bin",
        "parity-ops",
    ]))?;
    let build_seconds = build_started.elapsed().as_secs_f64();
    let vision = jit_off.binary(PROFILE.1, "parity-vision");
    let ops = jit_off.binary(PROFILE.1, "parity-ops");

    let work = target_dir().join("emulation/parity");
    let mut outcomes = Vec::new();
    let mut reference_seconds = 0.0;
    let mut reference = |stack: &Stack, suite: &str, dir: &Path, extra: &[&str]| -> Result<()> {
        let started = Instant::now();
        reference_side(stack, suite, dir, &strings(extra))?;
        reference_seconds += started.elapsed().as_secs_f64();
        Ok(())
    };
    let mut ours =
        |label: &'static str, stack: &Stack, binary: &Path, suite: &str, dir: &Path, extra: &[&str]| -> Result<()> {
            let started = Instant::now();
            let counts = our_side(stack, binary, suite, dir, &strings(extra))?;
            outcomes.push(Outcome { label, counts, seconds: started.elapsed().as_secs_f64() });
            Ok(())
        };
    let dir = work.join("vision");
    reference(&jit_off, "vision", &dir, &["--quick"])?;
    ours("vision --quick, JIT off, MLX's ops", &jit_off, &vision, "vision", &dir, &["--kernels", "mlx"])?;
    ours("vision --quick, JIT off, host kernels", &jit_off, &vision, "vision", &dir, &["--kernels", "host"])?;
    let dir = work.join("ops");
    reference(&jit_off, "ops", &dir, &["--small"])?;
    ours("ops --small, JIT off, MLX's ops and host kernels", &jit_off, &ops, "ops", &dir, &[])?;
    let dir = work.join("vision-jit");
    reference(&jit_on, "vision", &dir, &["--quick"])?;
    ours("vision --quick, JIT on, Kernels::Auto", &jit_on, &vision, "vision", &dir, &["--kernels", "auto"])?;
    ours("vision --quick, JIT on, host kernels", &jit_on, &vision, "vision", &dir, &["--kernels", "host"])?;

    let rows: Vec<String> =
        outcomes.iter().map(|o| format!("{}: {}/{} ({:.1} s)", o.label, o.counts.0, o.counts.1, o.seconds)).collect();
    println!(
        "emulate: both encoders on aarch64 under qemu-aarch64, bit-exact rows: {}; reference sides {reference_seconds:.1} \
         s, cross build {build_seconds:.1} s, this step {:.1} s",
        rows.join("; "),
        started.elapsed().as_secs_f64()
    );
    let inexact: usize = outcomes.iter().map(|o| o.counts.1 - o.counts.0).sum();
    if inexact == 0 { Ok(()) } else { Err(format!("{inexact} encoder rows are not bit-exact under emulation")) }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

/// A directory whose `g++` is [`CROSS_GXX`] (MLX's JIT runs `g++` by that name).
fn jit_compiler_dir() -> Result<PathBuf> {
    let compiler = setup::which(CROSS_GXX)
        .ok_or_else(|| format!("{CROSS_GXX} not found (Debian package g++-aarch64-linux-gnu)"))?;
    let bin = target_dir().join("emulation/jit-bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let link = bin.join("g++");
    if std::fs::read_link(&link).ok().as_deref() != Some(compiler.as_path()) {
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&compiler, &link).map_err(|e| format!("{}: {e}", link.display()))?;
    }
    Ok(bin)
}
