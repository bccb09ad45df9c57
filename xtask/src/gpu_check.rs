//! `cargo xtask gpu-check`: ours against stock mlx-vlm with both on the GPU, in one command, on
//! a Linux machine with an NVIDIA GPU (MLX's CUDA build) or an Apple-silicon Mac (Metal).
//!
//! 1. The GPU, before anything is installed: `nvidia-smi -L` must list one (Linux), or the
//!    machine must be an Apple-silicon Mac. Elsewhere the command stops here, non-zero, having
//!    installed and built nothing.
//! 2. The GPU's reference ([`gpu_venv`]): `.deps/venv-cuda` (`mlx-vlm==0.7.10`,
//!    `mlx[cuda12]==0.32.4` and the CUDA wheels pip resolves for it) or `.deps/venv-metal`
//!    (`mlx==0.32.4`), then scikit-image for the sample photographs; idempotent.
//! 3. MLX on the GPU, asked of that venv's MLX (`mx.is_available(mx.gpu)`): a driver MLX cannot
//!    use stops the command here.
//! 4. Our side built against that venv's MLX (`MLX_DIR`) into `target/gpu-check/`.
//! 5. `parity ops` and `parity vision --quick` (the tiny vision cases; `--full`: every case) with
//!    `PARITY_DEVICE=gpu`: mlx-vlm on `mx.gpu`, ours on MLX's ops on the GPU (the host kernels,
//!    which give MLX's CPU bits, are not compared).
//! 6. The e2e bench on the GPU ([`e2e::gpu`](bench::e2e::gpu)).
//!
//! It ends with one line, `gpu-check: …`, and fails unless every parity row is bit-exact and
//! our bf16 features equal mlx-vlm's in the bench.

use crate::gpu_venv;
use crate::parity;
use bench::e2e;
use clap::Parser;
use project::stack::Stack;
use project::{Result, cmd, target_dir};

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask gpu-check",
    about = "Ours against stock mlx-vlm with both on the GPU: parity and the e2e bench",
    long_about = "Ours against stock mlx-vlm with both on the GPU, on a Linux machine with an NVIDIA GPU and its \
                  driver (MLX's CUDA build, mlx[cuda12]==0.32.4) or on an Apple-silicon Mac (Metal, mlx==0.32.4).\n\n\
                  Checks for the GPU first (nvidia-smi -L) and stops, non-zero, installing nothing when there is \
                  none. Then installs the GPU's reference into .deps/venv-cuda (or .deps/venv-metal; idempotent, \
                  ~5 GB of CUDA wheels), builds our side against its MLX into target/gpu-check, runs `parity ops` \
                  and `parity vision --quick` with both sides on the GPU (PARITY_DEVICE=gpu; the host kernels are \
                  not compared) and the e2e bench of ours and mlx-vlm on the GPU (e2b and unified-12b at \
                  photo_640x480@280, bf16 and float32; BENCHMARKS.md is not written). Ends with one summary line; \
                  fails unless every parity row is bit-exact and our bf16 features equal mlx-vlm's."
)]
struct Args {
    /// Every vision case (the real-size ones too), not only the tiny ones
    #[arg(long)]
    full: bool,
}

pub fn main(args: &[String]) -> Result<()> {
    let argv = std::iter::once("cargo xtask gpu-check".to_owned()).chain(args.iter().cloned());
    let args = match Args::try_parse_from(argv) {
        Ok(args) => args,
        Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion) => {
            print!("{e}");
            return Ok(());
        }
        Err(e) => return Err(e.render().to_string().trim_end().trim_start_matches("error: ").to_owned()),
    };
    let started = std::time::Instant::now();
    let (backend, gpu) = gpu_venv::detect()?;
    eprintln!("gpu-check: {gpu}");
    crate::setup::debian_packages(crate::setup::DEBIAN_PACKAGES)?;
    let python = gpu_venv::ensure(backend)?;
    let mlx = gpu_probe(&python)?;
    eprintln!("gpu-check: {mlx}");
    let stack = Stack {
        mlx_dir: Some(gpu_venv::mlx_dir(&python)?),
        python,
        target_dir: target_dir().join("gpu-check"),
        device: Some("gpu"),
        ..Stack::cpu()
    };
    let extra: Vec<String> = if args.full { Vec::new() } else { vec!["--quick".to_owned()] };
    let (exact, total) = parity::run_suites(&stack, &["ops", "vision"], &extra)?;
    let (bench, bf16_exact) = e2e::gpu::run(&stack)?;
    for line in &bench {
        println!("gpu-check: e2e {line}");
    }
    let vision = if args.full { "vision" } else { "vision --quick" };
    println!(
        "gpu-check: {gpu} ({}, {mlx}): parity {exact}/{total} bit-exact (ops, {vision}); e2e bf16 features {} ({} s)",
        backend.name(),
        if bf16_exact { "bit-exact" } else { "NOT bit-exact" },
        started.elapsed().as_secs()
    );
    match (exact == total, bf16_exact) {
        (true, true) => Ok(()),
        (false, _) => Err(format!("{} parity rows on the GPU are not bit-exact", total - exact)),
        (true, false) => Err("our bf16 features differ from mlx-vlm's on the GPU (see the e2e lines)".to_owned()),
    }
}

/// `MLX <version> on <device>` from the venv's MLX, or why it cannot run on the GPU here.
fn gpu_probe(python: &std::path::Path) -> Result<String> {
    let out = cmd(python, &["-c", GPU_PROBE]).output().map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned());
    }
    Err(format!(
        "{}\nthe GPU's MLX cannot run on the GPU here ({}); nothing was built or compared",
        String::from_utf8_lossy(&out.stderr).trim(),
        python.display()
    ))
}

/// Prints `MLX <version> on <device>` when MLX can run on the GPU, else fails with why.
const GPU_PROBE: &str = "import sys\n\
    try:\n\
    \x20   import mlx.core as mx\n\
    except ImportError as e:\n\
    \x20   sys.exit(f'cannot import the GPU build of MLX: {e}')\n\
    if not mx.is_available(mx.gpu):\n\
    \x20   sys.exit(f'MLX {mx.__version__} cannot run on the GPU here')\n\
    mx.set_default_device(mx.gpu)\n\
    mx.eval(mx.ones((2, 2)) @ mx.ones((2, 2)))\n\
    print(f'MLX {mx.__version__} on {mx.default_device()}')\n";
