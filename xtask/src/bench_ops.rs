//! `cargo xtask bench ops [bench…]`: every block of the `layers` crate timed by its criterion
//! bench (crates/layers/benches, `eval` inside the timed region) and, in the same run, the same
//! call through MLX's Python API on the reference's own modules (crates/parity/python/ops.py
//! `--bench`, sampled the way criterion samples). Bench files run one at a time, each followed at
//! once by its Python twin, so both sides see the same machine load; the files of all but the
//! slowest blocks alternate a few rounds and keep each side's best median. The table of medians and
//! ratios (Rust / Python) goes into the `ops` section of BENCHMARKS.md with the machine
//! described; naming bench files runs only those and prints the table without writing it.

use crate::bench::write_section;
use crate::json::{json_number, json_numbers, json_string};
use crate::machine::{Machine, load_average};
use crate::project::{Result, cargo, linked_blas, oracle_python, output, root, run, work_dir};
use crate::setup;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// Bench files of crates/layers/benches and the cases (criterion group names) each times.
const BENCHES: &[(&str, &[&str])] = &[
    ("rms_norm", &["rms_norm", "rms_norm_no_scale"]),
    ("vision_rms_norm", &["vision_rms_norm", "vision_rms_norm_no_scale"]),
    ("layer_norm", &["layer_norm"]),
    ("rope", &["rope_2d", "rope_2d_cached", "rope_1d"]),
    ("gelu", &["gelu_approx"]),
    ("linear", &["linear", "linear_bias"]),
    ("clippable_linear", &["clippable_linear"]),
    ("sdpa", &["sdpa", "sdpa_hd72", "sdpa_gqa"]),
    ("geglu_mlp", &["geglu_mlp"]),
    ("vision_attention", &["vision_attention"]),
    ("vision_block", &["vision_block"]),
];

/// Bench files whose blocks take at most a few seconds, and how many alternating Rust/Python
/// rounds they run: each side keeps its best median over the rounds, so that a burst of load
/// from other processes during one side's turn does not decide a ratio. The files of the
/// slowest blocks (SDPA at 2520 tokens, MLP, attention, block: 10 samples of seconds each) run once.
const REPEATED: &[&str] = &["rms_norm", "vision_rms_norm", "layer_norm", "rope", "gelu", "linear", "clippable_linear"];
const ROUNDS: usize = 3;

/// Our cases without a reference case of the same name, and the reference call each is
/// compared with.
const REFERENCE_CASE: &[(&str, &str)] = &[("rope_2d_cached", "rope_2d")];

/// How to read the table (the same every run; the numbers above it are this run's). The
/// instruction counts were taken with valgrind's callgrind on one call per side, the compiled
/// versus eager GELU by timing both interleaved in one process.
const NOTES: &str = "\
How to read it.

- Expected ratio: 1. Both sides build the same MLX graph op for op (`cargo xtask parity ops`: every \
row bit-identical) and run it on the same libmlx, the same BLAS (BLIS, which serves the float32 \
matmuls) and the same BLAS thread count (one per core: our binaries set it when MLX is first used, \
the Python side gets `BLIS_NUM_THREADS`). Inside an `mx.eval` there is no Python-side work for Rust \
to save; only the building of the graph (timed on both sides) runs through the interpreter.
- Checked at the instruction level (callgrind, one call per side) for the rows that looked slowest \
in Rust on a loaded machine: a float32 `linear` and `linear_bias` execute exactly the same BLIS \
microkernel, packing and MLX copy instruction counts on both sides (no extra copy, transposition or \
conversion), and differ only in the time BLIS threads spin at their barriers, which is waiting, not \
work; a float32 `vision_block` (60 tokens) executes the same BLIS and libm instructions, and MLX \
work within 1% (the differences: the compiled kernels and the RoPE tables named below).
- Load. This is a shared 2-core machine (see the load averages); rows away from 1 without a cause \
below move from run to run, and the fastest-sample column is the less disturbed estimate. Float32 \
matmul rows (`linear`, `linear_bias`, `clippable_linear`, and the MLP, attention and block in \
float32) are the most sensitive: each matmul runs one BLIS thread per core, and the threads meet at \
barriers, so a call lasts as long as its most descheduled thread. Under a load average of about 9, \
back-to-back timings of the same float32 `linear` call gave Rust/Python ratios of medians from 0.4 \
to 2.8.
- Buffer cache. Each case starts from an empty MLX buffer cache on both sides, since what earlier \
cases left there otherwise changes a millisecond block's time by up to 2x.
- `gelu_approx`: the reference's `nn.gelu_approx` is `mx.compile`d, ours is the eager graph (same \
bits). In bfloat16 the compiled kernel is slower than the eager graph on this CPU backend (about \
1.2x, both timed interleaved in one Python process), so Rust is faster; in float32 they take the \
same time.
- `geglu_mlp`, `vision_attention`, `vision_block`: the reference runs the compiled `gelu_approx` and \
the compiled `ensure_fused_sdpa` (whose scale multiply and mask add become compiled kernels), ours \
the eager ops; same bits, under 1% of a block's instructions. Our attention builds the RoPE tables \
once per call and rotates q and k with them; the reference builds them twice (once per \
`apply_multidimensional_rope`), a small saving for Rust.
- `rope_2d_cached` is the encoder's per-layer RoPE cost in Rust, with the tables built once per \
grid instead of on every call as the reference does.";

/// One row of the table: each side's median and fastest sample (seconds per call).
struct Row {
    case: String,
    label: String,
    shapes: String,
    rust: Timing,
    python: Timing,
}

/// A median and the fastest sample's mean, in seconds per call.
#[derive(Clone, Copy)]
struct Timing {
    median: f64,
    fastest: f64,
}

impl Timing {
    /// The better of two measurements of the same thing, statistic by statistic.
    fn best(self, other: Timing) -> Timing {
        Timing { median: self.median.min(other.median), fastest: self.fastest.min(other.fastest) }
    }
}

/// One reference timing, from a JSON line of ops.py.
struct Reference {
    case: String,
    label: String,
    timing: Timing,
    shapes: String,
}

pub fn main(args: &[String]) -> Result<()> {
    let selected: Vec<(&str, &[&str])> =
        BENCHES.iter().copied().filter(|(file, _)| args.is_empty() || args.iter().any(|a| a == file)).collect();
    if selected.is_empty() {
        let names: Vec<&str> = BENCHES.iter().map(|(file, _)| *file).collect();
        return Err(format!("no such bench; choose among {}", names.join(", ")));
    }
    setup::main()?;
    let dir = work_dir("bench/ops")?;
    let criterion_home = dir.join("criterion");
    let _ = fs::remove_dir_all(&criterion_home);
    let load_before = load_average();
    run(cargo().args(["bench", "--quiet", "-p", "layers", "--no-run"]))?;

    let mut mlx_version = String::from("?");
    let mut rows = Vec::new();
    for (file, cases) in &selected {
        let rounds = if REPEATED.contains(file) { ROUNDS } else { 1 };
        let mut best: Vec<Row> = Vec::new();
        for round in 1..=rounds {
            eprintln!("bench ops: {file}: Rust (criterion), round {round}/{rounds}");
            run(cargo()
                .args(["bench", "--quiet", "-p", "layers", "--bench", file])
                .env("CRITERION_HOME", &criterion_home))?;
            eprintln!("bench ops: {file}: Python (the reference's modules), round {round}/{rounds}");
            let mut reference_cases: Vec<&str> = cases.iter().map(|c| reference_case(c)).collect();
            reference_cases.dedup();
            let script = root().join("crates/parity/python/ops.py");
            let mut python = oracle_python(&script);
            python.arg("--out").arg(&dir).arg("--bench").arg("--only").args(&reference_cases);
            let (version, references) = parse_reference(&output(python)?)?;
            mlx_version = version;
            for case in *cases {
                for reference in references.iter().filter(|r| r.case == reference_case(case)) {
                    let rust = criterion_timing(&criterion_home, case, &reference.label)?;
                    match best.iter_mut().find(|r| r.case == *case && r.label == reference.label) {
                        Some(row) => {
                            row.rust = row.rust.best(rust);
                            row.python = row.python.best(reference.timing);
                        }
                        None => best.push(Row {
                            case: case.to_string(),
                            label: reference.label.clone(),
                            shapes: reference.shapes.clone(),
                            rust,
                            python: reference.timing,
                        }),
                    }
                }
            }
        }
        for row in best {
            eprintln!(
                "bench ops: {:<26} {:<18} rust {:>10.3} ms  python {:>10.3} ms  ratio {:.2} (fastest samples {:.2})",
                row.case,
                row.label,
                row.rust.median * 1e3,
                row.python.median * 1e3,
                row.rust.median / row.python.median,
                row.rust.fastest / row.python.fastest
            );
            rows.push(row);
        }
    }
    let table = render(&rows, &mlx_version, &load_before, &load_average());
    println!("{table}");
    if args.is_empty() {
        write_section("ops", &table)?;
        eprintln!("bench ops: wrote the `ops` section of BENCHMARKS.md");
    } else {
        eprintln!("bench ops: a subset ran; BENCHMARKS.md left as it was");
    }
    Ok(())
}

fn reference_case(case: &str) -> &str {
    REFERENCE_CASE.iter().find(|(ours, _)| *ours == case).map_or(case, |(_, theirs)| theirs)
}

/// The header line `{"mlx": …}` and one [`Reference`] per entry line.
fn parse_reference(text: &str) -> Result<(String, Vec<Reference>)> {
    let mut version = String::from("?");
    let mut references = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| l.starts_with('{')) {
        if let Some(v) = json_string(line, "mlx") {
            version = v;
            continue;
        }
        let field = |key: &str| json_string(line, key).ok_or_else(|| format!("ops.py: no `{key}` in {line}"));
        let number = |key: &str| json_number(line, key).ok_or_else(|| format!("ops.py: no `{key}` in {line}"));
        let timing = Timing { median: number("seconds")?, fastest: number("fastest")? };
        references.push(Reference { case: field("case")?, label: field("label")?, timing, shapes: field("shapes")? });
    }
    Ok((version, references))
}

/// Criterion's median estimate for `<group>/<function>` and its fastest sample (from
/// `sample.json`: per-sample total times and iteration counts), in seconds per call.
fn criterion_timing(home: &Path, group: &str, function: &str) -> Result<Timing> {
    let dir = home.join(group).join(function).join("new");
    let read = |name: &str| {
        let path = dir.join(name);
        fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let estimates = read("estimates.json")?;
    let median = estimates
        .find("\"median\"")
        .and_then(|at| json_number(&estimates[at..], "point_estimate"))
        .ok_or_else(|| format!("{}: no median estimate", dir.display()))?;
    let samples = read("sample.json")?;
    let (iters, times) = (json_numbers(&samples, "iters"), json_numbers(&samples, "times"));
    let fastest = iters.iter().zip(&times).map(|(n, t)| t / n).fold(f64::INFINITY, f64::min);
    if !fastest.is_finite() {
        return Err(format!("{}: no samples", dir.display()));
    }
    Ok(Timing { median: median * 1e-9, fastest: fastest * 1e-9 })
}

fn render(rows: &[Row], mlx_version: &str, load_before: &str, load_after: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Ops: `layers` blocks vs the reference's modules\n");
    let _ = writeln!(
        out,
        "Median time of one call, evaluation included. Rust: criterion benches in `crates/layers/benches` \
         (ids `<case>/<dtype>`); Python: the same call on mlx-vlm 0.7.10's own modules and functions \
         (`crates/parity/python/ops.py --bench`), sampled the same way, run right after each bench file. \
         All but the slowest blocks (SDPA at 2520 tokens, MLP, attention, block) alternate three \
         Rust/Python rounds and keep each side's best statistics. Both sides run the same libmlx and BLAS. \
         Ratio = Rust / Python (below 1: Rust faster), of the medians and of each side's fastest sample \
         (the least disturbed by other processes on this shared machine).\n"
    );
    let _ = writeln!(out, "Machine: {}", machine(mlx_version));
    let _ = writeln!(out, "Load average (1, 5, 15 min) before: {load_before}; after: {load_after}.\n");
    let _ = writeln!(
        out,
        "| case | dtype | shapes | Rust (ms) | Python (ms) | Rust / Python | Rust / Python, fastest samples |"
    );
    let _ = writeln!(out, "|---|---|---|---:|---:|---:|---:|");
    for row in rows {
        let case = match reference_case(&row.case) {
            same if same == row.case => row.case.clone(),
            other => format!("{} (vs {other})", row.case),
        };
        let _ = writeln!(
            out,
            "| {case} | {} | {} | {:.3} | {:.3} | {:.2} | {:.2} |",
            row.label,
            row.shapes,
            row.rust.median * 1e3,
            row.python.median * 1e3,
            row.rust.median / row.python.median,
            row.rust.fastest / row.python.fastest
        );
    }
    let summary = |ratio: &dyn Fn(&Row) -> f64| {
        let largest = rows.iter().map(ratio).fold(0.0, f64::max);
        let geomean = (rows.iter().map(|r| ratio(r).ln()).sum::<f64>() / rows.len().max(1) as f64).exp();
        format!("geometric mean {geomean:.2}, largest {largest:.2}")
    };
    let _ = writeln!(
        out,
        "\nRatios of medians: {}. Ratios of fastest samples: {}.",
        summary(&|r| r.rust.median / r.python.median),
        summary(&|r| r.rust.fastest / r.python.fastest)
    );
    let _ = writeln!(out, "\n{NOTES}");
    out
}

/// CPU model and cores, OS, MLX version and device, and the BLAS serving float32 matmuls.
fn machine(mlx_version: &str) -> String {
    let Machine { model, cores, memory, os, .. } = Machine::read();
    let blas = linked_blas().map_or("the BLAS libmlx was built with".to_owned(), |p| {
        format!("{} with {cores} threads per call on both sides", p.display())
    });
    format!("{model}, {cores} cores{memory}; {os}; MLX {mlx_version} (CPU backend); float32 BLAS {blas}.")
}
