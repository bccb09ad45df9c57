//! `cargo xtask bench preprocess`: image bytes to the gemma4_unified encoder input (decode,
//! budget resize, rescale, 48x48 patches padded to the budget), ours against the reference's
//! Pillow + NumPy path, on the same files in the same run.
//!
//! 1. `crates/parity/python/preprocess.py --bench` writes the inputs (a 12-megapixel JPEG and a
//!    1024x768 PNG) and times the reference's own code on them (median of N runs).
//! 2. The criterion bench `crates/preprocess/benches/preprocess.rs` times ours on the same
//!    files, once on one core (`RAYON_NUM_THREADS=1`) and once on every core.
//!
//! The table of medians and speed-ups fills `bench/templates/preprocess.md`, written into the
//! `preprocess` section of BENCHMARKS.md.

use crate::Setup;
use crate::criterion;
use crate::machine::{Load, Machine, cores};
use crate::{template, write_section};
use project::{Result, cargo, cmd, output, python, root, run, work_dir};
use serde_json::Value;
use std::fmt::Write as _;
use std::fs;

/// Bench inputs (file stems) and budgets, as named by both sides.
const FILES: &[(&str, &str)] =
    &[("photo_4000x3000", "12-megapixel JPEG (4:2:0, q90)"), ("photo_1024x768", "1024x768 PNG (RGB)")];
const BUDGETS: &[u32] = &[280, 1120];
const REFERENCE_SAMPLES: &str = "10";

pub fn main(setup: Setup) -> Result<()> {
    setup()?;
    let dir = work_dir("bench/preprocess")?;
    let load = Load::start();
    run(cargo().args(["bench", "-p", "gemma-vision-preprocess", "--bench", "preprocess", "--no-run"]))?;

    eprintln!("bench preprocess: reference (mlx-vlm 0.7.10 + Pillow + NumPy)");
    let script = root().join("crates/parity/python/preprocess.py");
    let mut reference = cmd(python(), &[]);
    reference.arg(&script).arg("--out").arg(&dir).args(["--bench", "--samples", REFERENCE_SAMPLES]);
    let reference = output(reference)?;

    let cores = cores();
    let mut ours = Vec::new();
    for threads in [1, cores] {
        eprintln!("bench preprocess: ours (criterion), {threads} thread(s)");
        let home = dir.join(format!("criterion-{threads}"));
        let _ = fs::remove_dir_all(&home);
        run(cargo()
            .args(["bench", "--quiet", "-p", "gemma-vision-preprocess", "--bench", "preprocess"])
            .env("PREPROCESS_BENCH_DIR", &dir)
            .env("CRITERION_HOME", &home)
            .env("RAYON_NUM_THREADS", threads.to_string()))?;
        ours.push((threads, home));
    }

    let mut rows = Vec::new();
    for (stem, description) in FILES {
        for budget in BUDGETS {
            let case = format!("{stem}_{budget}");
            let reference_seconds = reference
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|j| j["case"].as_str() == Some(case.as_str()))
                .and_then(|j| j["seconds"].as_f64())
                .ok_or_else(|| format!("preprocess.py --bench printed no timing for {case}"))?;
            let mut timings = Vec::new();
            for (threads, home) in &ours {
                let median = |path: &[&str]| criterion::read(home, path).map(|e| e.median);
                let pipeline = median(&["pipeline", &case])?;
                let decode = median(&["stages", &format!("{stem}_decode")])?;
                let resize = median(&["stages", &format!("{stem}_resize_{budget}")])?;
                timings.push((*threads, pipeline, decode, resize));
            }
            rows.push((description.to_string(), *budget, reference_seconds, timings));
        }
    }
    let mut table = String::from("| input | budget | reference (ms) |");
    for (threads, _) in &ours {
        let _ = write!(table, " ours, {threads} core(s) (ms) | speed-up |");
    }
    let _ = writeln!(table, " ours: decode / resize, 1 core (ms) |");
    let _ = writeln!(table, "|---|---:|---:|{}---:|", "---:|---:|".repeat(ours.len()));
    for (description, budget, reference_seconds, timings) in &rows {
        let _ = write!(table, "| {description} | {budget} | {:.1} |", reference_seconds * 1e3);
        for (_, pipeline, _, _) in timings {
            let _ = write!(table, " {:.1} | {:.1}x |", pipeline * 1e3, reference_seconds / pipeline);
        }
        let (_, _, decode, resize) = timings[0];
        let _ = writeln!(table, " {:.1} / {:.1} |", decode * 1e3, resize * 1e3);
    }
    let section = template::render(
        "preprocess",
        &[
            ("samples", REFERENCE_SAMPLES.to_owned()),
            ("cores", cores.to_string()),
            ("machine", format!("{}.", Machine::read().describe())),
            ("load", load.finish().describe()),
            ("table", table.trim_end().to_owned()),
        ],
    )?;
    println!("{section}");
    write_section("preprocess", &section)?;
    eprintln!("bench preprocess: wrote the `preprocess` section of BENCHMARKS.md");
    Ok(())
}
