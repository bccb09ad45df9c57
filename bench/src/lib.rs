//! The bench suites: `cargo xtask bench <ops|preprocess|e2e|kernels|embed|mlx-vlm|summary|check>`
//! (xtask dispatches here, [`main`]): our timings beside the reference's (and other
//! implementations'), in one run, written into `BENCHMARKS.md`: each suite owns one marked
//! section of that file, whose prose is its template under `bench/templates/`; the summary atop
//! the file quotes the sections.
//!
//! Everything a suite runs sits beside this crate under `bench/`: our side of `e2e`
//! (`encode/`), candle's (`candle-gemma4/`), llama.cpp's driver (`llama-mtmd/`) and the Python
//! scripts (`python/`). Like xtask, the crate depends on small pure-Rust crates only; what it
//! times is built through cargo when a suite runs.
//!
//! Shared by the suites: [`machine`] (what the machine is and how loaded), [`criterion`]
//! (reading criterion's results), [`gemm_peak`] (the machine's float32 GEMM peak), [`exact_floor`]
//! (the least time MLX's bits allow on this machine), [`formula`]
//! (FLOP formulas printed and evaluated from one text), [`template`], [`sections`] (the
//! generated sections of BENCHMARKS.md and their check), [`summary`] (the file's summary, one
//! table per machine quoted from the sections' tables, read by [`markdown_table`]) and
//! [`wheel`] (the release wheel of the Python package).

mod criterion;
pub mod e2e;
mod embed;
mod exact_floor;
mod formula;
mod gemm_peak;
mod kernels;
mod machine;
mod markdown_table;
mod mlx_vlm;
mod ops;
mod preprocess;
mod sections;
mod summary;
mod template;
mod wheel;

use clap::{Parser, Subcommand};
use project::Result;

#[derive(Debug, Parser)]
#[command(name = "cargo xtask bench", about = "Timings beside the reference's, written into BENCHMARKS.md")]
struct Bench {
    #[command(subcommand)]
    suite: Suite,
}

#[derive(Debug, Subcommand)]
enum Suite {
    /// `layers` blocks (criterion) against the reference's modules on the same libmlx
    Ops(ops::Args),
    /// Image bytes to the unified encoder's input, ours against Pillow + NumPy
    Preprocess,
    /// Image bytes to features: ours, mlx-vlm, candle and llama.cpp on the same checkpoints
    E2e(e2e::Args),
    /// Each host kernel (criterion benches of the kernels crate) beside MLX's primitive and the
    /// machine's GEMM peak
    Kernels(kernels::Args),
    /// Corpus jobs: `gemma-vision embed` and the Ray Data job (images/s), and embed's peak RSS by
    /// corpus size
    Embed(embed::Args),
    /// mlx-vlm's own generation, stock against accelerated: time to first token, decode rate,
    /// identical tokens
    #[command(name = "mlx-vlm")]
    MlxVlm(mlx_vlm::Args),
    /// Rewrites BENCHMARKS.md's summary from the tables of its sections (runs nothing)
    Summary,
    /// Checks BENCHMARKS.md's generated sections against their templates, their run stamps and
    /// the reference's MLX release, and its summary against the sections (runs nothing)
    Check,
}

/// What a suite runs before it measures: xtask's `setup` (everything installed into `.deps/`,
/// idempotent), handed in by xtask, which owns it.
pub type Setup = fn() -> Result<()>;

/// `cargo xtask bench ARGS`: the suite `args` name, after `setup` (`summary`, `check` and
/// `--help` run nothing).
pub fn main(args: &[String], setup: Setup) -> Result<()> {
    let argv = std::iter::once("cargo xtask bench".to_owned()).chain(args.iter().cloned());
    let bench = match Bench::try_parse_from(argv) {
        Ok(bench) => bench,
        Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion) => {
            print!("{e}");
            return Ok(());
        }
        Err(e) => return Err(e.render().to_string().trim_end().trim_start_matches("error: ").to_owned()),
    };
    match bench.suite {
        Suite::Ops(args) => ops::main(&args, setup),
        Suite::Preprocess => preprocess::main(setup),
        Suite::E2e(args) => e2e::main(&args, setup),
        Suite::Kernels(args) => kernels::main(&args, setup),
        Suite::Embed(args) => embed::main(&args, setup),
        Suite::MlxVlm(args) => mlx_vlm::main(&args, setup),
        Suite::Summary => summary::write(),
        Suite::Check => match sections::check()?.as_slice() {
            [] => {
                eprintln!("bench check: every generated section of BENCHMARKS.md is current");
                Ok(())
            }
            problems => Err(format!("BENCHMARKS.md:\n{}", problems.join("\n"))),
        },
    }
}

/// A suite's flags `args` parsed as `cargo xtask bench SUITE` parses them (the suites' tests).
#[cfg(test)]
fn parse_suite_args<A: clap::Args>(suite: &str, args: &[&str]) -> std::result::Result<A, clap::Error> {
    #[derive(Debug, Parser)]
    struct SuiteCommand<A: clap::Args> {
        #[command(flatten)]
        args: A,
    }
    SuiteCommand::<A>::try_parse_from(std::iter::once(suite).chain(args.iter().copied())).map(|c| c.args)
}

/// Replaces the section `name` of BENCHMARKS.md with `content` (see [`sections::write`]).
/// The section is regenerated by `cargo xtask bench NAME`.
pub fn write_section(name: &str, content: &str) -> Result<()> {
    sections::write(name, &format!("cargo xtask bench {name}"), content)
}

/// [`write_section`] for a section that `command` regenerates.
pub fn write_section_made_by(name: &str, command: &str, content: &str) -> Result<()> {
    sections::write(name, command, content)
}
