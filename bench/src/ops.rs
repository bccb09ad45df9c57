//! `cargo xtask bench ops [BENCH…]`: every block of the `layers` crate timed by its criterion
//! bench (crates/layers/benches, `eval` inside the timed region) and, in the same run, the same
//! call through MLX's Python API on the reference's own modules (crates/parity/python/ops.py
//! `--bench`, sampled the way criterion samples). Bench files run one at a time, each followed at
//! once by its Python twin, so both sides see the same machine load; the files of all but the
//! slowest blocks alternate a few rounds and keep each side's best median. The table of medians and
//! ratios (Rust / Python) fills `bench/templates/ops.md`, written into the `ops` section of
//! BENCHMARKS.md; naming bench files runs only those and prints the table without writing it.

use crate::Setup;
use crate::criterion::{self, Estimate};
use crate::machine::{Load, Machine};
use crate::{template, write_section};
use project::{Result, cargo, oracle_python, output, root, run, work_dir};
use serde_json::Value;
use std::fmt::Write as _;
use std::fs;

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

impl From<&Estimate> for Timing {
    fn from(estimate: &Estimate) -> Timing {
        Timing { median: estimate.median, fastest: estimate.fastest }
    }
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

/// Which bench files to run.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Bench files of crates/layers/benches to run (all by default; a subset prints its table
    /// without writing BENCHMARKS.md)
    benches: Vec<String>,
}

pub fn main(args: &Args, setup: Setup) -> Result<()> {
    let args = &args.benches;
    let selected: Vec<(&str, &[&str])> =
        BENCHES.iter().copied().filter(|(file, _)| args.is_empty() || args.iter().any(|a| a == file)).collect();
    if selected.is_empty() || selected.len() < args.len() {
        let names: Vec<&str> = BENCHES.iter().map(|(file, _)| *file).collect();
        return Err(format!("no such bench; choose among {}", names.join(", ")));
    }
    setup()?;
    let dir = work_dir("bench/ops")?;
    let criterion_home = dir.join("criterion");
    let _ = fs::remove_dir_all(&criterion_home);
    let load = Load::start();
    run(cargo().args(["bench", "-p", "gemma-vision-layers", "--no-run"]))?;

    let mut mlx_version = String::from("?");
    let mut rows = Vec::new();
    for (file, cases) in &selected {
        let rounds = if REPEATED.contains(file) { ROUNDS } else { 1 };
        let mut best: Vec<Row> = Vec::new();
        for round in 1..=rounds {
            eprintln!("bench ops: {file}: Rust (criterion), round {round}/{rounds}");
            run(cargo()
                .args(["bench", "--quiet", "-p", "gemma-vision-layers", "--bench", file])
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
                    let rust = Timing::from(&criterion::read(&criterion_home, &[case, &reference.label])?);
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
    let table = render(&rows, &mlx_version, &load.finish())?;
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
        let json: Value = serde_json::from_str(line).map_err(|e| format!("ops.py printed `{line}`: {e}"))?;
        if let Some(v) = json["mlx"].as_str() {
            version = v.to_owned();
            continue;
        }
        let field =
            |key: &str| json[key].as_str().map(str::to_owned).ok_or_else(|| format!("ops.py: no `{key}` in {line}"));
        let number = |key: &str| json[key].as_f64().ok_or_else(|| format!("ops.py: no `{key}` in {line}"));
        let timing = Timing { median: number("seconds")?, fastest: number("fastest")? };
        references.push(Reference { case: field("case")?, label: field("label")?, timing, shapes: field("shapes")? });
    }
    Ok((version, references))
}

fn render(rows: &[Row], mlx_version: &str, load: &Load) -> Result<String> {
    let mut table = String::from(
        "| case | dtype | shapes | Rust (ms) | Python (ms) | Rust / Python | Rust / Python, fastest samples |\n\
         |---|---|---|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let case = match reference_case(&row.case) {
            same if same == row.case => row.case.clone(),
            other => format!("{} (vs {other})", row.case),
        };
        let _ = writeln!(
            table,
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
    let machine = Machine::read();
    template::render(
        "ops",
        &[
            (
                "machine",
                format!(
                    "{}; MLX {mlx_version} (CPU backend); float32 matmuls on both sides in the mlx-cpu wheel's bundled BLAS.",
                    machine.describe()
                ),
            ),
            ("load", load.describe()),
            ("table", table.trim_end().to_owned()),
            ("median_ratios", summary(&|r| r.rust.median / r.python.median)),
            ("fastest_ratios", summary(&|r| r.rust.fastest / r.python.fastest)),
        ],
    )
}
