//! Project automation in the rust-analyzer manner: `cargo xtask <command>`.
//!
//! xtask depends on small pure-Rust crates only (clap, serde_json), not on the MLX crates, so it
//! builds on a fresh machine; commands that need MLX run setup first, then build and run the
//! project's own binaries through cargo.

mod aarch64_wheel;
mod cli;
mod corpus;
mod cross_kernels;
mod cuda_build;
mod cuda_wheel;
mod downstream;
mod emulated_decoders;
mod emulated_parity;
mod emulation;
mod fuzz;
mod gpu_check;
mod gpu_venv;
mod package;
mod parity;
mod setup;
mod soak;
mod stamp;
mod test;
mod wheels;

use std::process::ExitCode;

const HELP: &str = "\
cargo xtask <command>

  setup         install or unpack everything into .deps/ (idempotent)
  test          setup, then fmt --check, clippy -D warnings, cargo test --workspace, cuda-build,
                the library crates' docs (-D warnings), the crates packaged and a crate outside
                the workspace built on the packages, emulate, the Python package's tests, its
                wheels installed with no build tools on CPython 3.10 and the newest and on
                aarch64 Linux under qemu-aarch64, its source install
  cuda-build    mlx-ffi built against MLX's CUDA wheel (mlx-cuda-12, fetched into .deps/), no GPU
                needed, and that opening its libmlx without the CUDA driver fails with one clear error
  gpu-check [--full] [--help]
                on a Linux machine with an NVIDIA GPU (or an Apple-silicon Mac): the GPU's MLX
                and mlx-vlm in .deps/venv-cuda, parity ops + vision --quick and the e2e bench with
                both sides on the GPU, one summary line; stops, installing nothing, without a GPU
  docs          cargo doc --no-deps of the library crates with warnings denied
  package       every published crate packaged (cargo package) and unpacked, and a crate
                outside the workspace built and run on the packages
  doctor        MLX version and backend, the host kernels' CPU path, MLX's and the host
                kernels' matmul GFLOP/s and whether their bits agree
  parity [ops|preprocess|vision] [--quick] [--fresh]
                our outputs against the reference's, bit for bit (all suites by default;
                preprocess ends with one row per file of Pillow's test images;
                --quick: the tiny vision cases only; --fresh: recompute the reference
                outputs kept in .deps/parity-cache)
  bench <ops|preprocess|e2e|kernels|embed|mlx-vlm|summary|check> [--help]
                timings beside the reference's (embed: corpus jobs; mlx-vlm: its generation,
                stock against accelerated), written into BENCHMARKS.md; summary: its summary
                rewritten from the sections' tables; check: the sections against their
                templates and the summary against the sections (both run nothing)
  fuzz [--seconds N] [--target NAME]
                every cargo-fuzz target under fuzz/ (or the one named) for N seconds each;
                the decode_<format> targets seeded with Pillow's test images of their format
  emulate       stock MLX's CPU arithmetic on aarch64 Linux (the PyPI aarch64 wheels under
                qemu-aarch64) against this machine's, op by op, and the arithmetic model that
                reproduces both; then the kernels crate cross-built for aarch64: its tests
                under qemu-aarch64, and its kernels on the op list against stock MLX on each
                platform; then both encoders cross-built for aarch64 against stock aarch64
                mlx-vlm under qemu-aarch64 at small shapes (MLX's CPU JIT off: MLX's ops and
                the host kernels; JIT on: Kernels::Auto and the host kernels)
  wheels [--aarch64]
                the Python package's wheel and source-install steps of `test`, alone: the
                wheels installed with no build tools on CPython 3.10 and the newest, the aarch64
                Linux wheel cross-built and installed under qemu-aarch64 beside stock aarch64
                mlx-vlm (--aarch64: that one alone), the source install
  soak [--iterations N]
                thousands of encodes, printing MLX active memory and RSS
  encode --model DIR|ORG/NAME[@REV] (--image FILE… | --frames FILE…) [--max-soft-tokens N] [--dtype native|f32] --out FILE
                features of images, or of one video's frames (the release gemma-vision binary)
  preprocess --model DIR|ORG/NAME[@REV] --image FILE [--max-soft-tokens N] --out FILE
                what the encoder consumes for an image
  inspect --model DIR|ORG/NAME[@REV] [--max-soft-tokens N] [--image-size WxH] [--json]
                what a checkpoint is and where it came from: dimensions, quantized modules,
                budget, tensors
  embed --model DIR|ORG/NAME[@REV] --images DIR|GLOB|LIST --out DIR [--batch N] [--shard-size N] …
                a corpus into safetensors shards, resumable
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((command, rest)) => (command.as_str(), rest),
        None => ("help", &[][..]),
    };
    let result = match command {
        "setup" => setup::main(),
        "test" => test::main(rest),
        "package" => downstream::package_command(),
        "docs" => package::docs(),
        "doctor" => test::doctor(),
        "cuda-build" => cuda_build::main(),
        "gpu-check" => gpu_check::main(rest),
        "parity" => parity::main(rest),
        "bench" => bench::main(rest, setup::main),
        "encode" | "preprocess" | "inspect" | "embed" => cli::main(command, rest),
        "soak" => soak::main(rest),
        "wheels" => wheels::main(rest),
        "fuzz" => fuzz::main(rest),
        "emulate" => emulation::main(),
        "help" | "--help" | "-h" => {
            print!("{HELP}");
            Ok(())
        }
        other => Err(format!("unknown command `{other}`\n\n{HELP}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
