//! `cargo xtask fuzz [--seconds N]`: every cargo-fuzz target under `fuzz/fuzz_targets/`, N
//! seconds each (default 60).
//!
//! cargo-fuzz is installed from crates.io when missing. Only a stable toolchain is available, so
//! the nightly flags cargo-fuzz passes (`-Zsanitizer=address`, sancov) are enabled with
//! `RUSTC_BOOTSTRAP=1`. Each target starts from its checked-in corpus
//! `fuzz/corpus/<target>/` (read only); inputs the run discovers go to
//! `<target dir>/fuzz/corpus/<target>/` so the checked-in corpus stays small. A crash, a panic,
//! a leak or an out-of-memory fails the command; libFuzzer leaves the input in
//! `fuzz/artifacts/<target>/`. So does an input that runs longer than 30 seconds.
//!
//! libFuzzer's output is passed through; its final statistics are collected into a summary
//! printed at the end: per target, the executions, the seconds run, executions per second, the
//! inputs it added to the corpus and its peak resident set.
//!
//! Not part of `cargo xtask test`: the fuzz build is a second cold build of every dependency
//! (release, AddressSanitizer, one codegen unit; mlx-c and libjpeg-turbo included), measured at
//! ~13 CPU-minutes, plus ~1.5 CPU-minutes to install cargo-fuzz. Every finding so far is a unit
//! test instead, which CI runs.

use crate::project::{Result, cargo, root, run, work_dir};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const DEFAULT_SECONDS: u64 = 60;

/// libFuzzer's limit for one input (its default is 20 minutes).
const INPUT_TIMEOUT_SECONDS: u64 = 30;

pub fn main(args: &[String]) -> Result<()> {
    let seconds = parse_seconds(args)?;
    ensure_cargo_fuzz()?;
    let targets = targets()?;
    if targets.is_empty() {
        return Err("no fuzz targets in fuzz/fuzz_targets".to_owned());
    }
    let mut failed = Vec::new();
    let mut summary = Vec::new();
    for target in &targets {
        eprintln!("fuzz: {target} for {seconds} s");
        let discovered = work_dir(&format!("fuzz/corpus/{target}"))?;
        let seeds = root().join("fuzz/corpus").join(target);
        fs::create_dir_all(&seeds).map_err(|e| format!("creating {}: {e}", seeds.display()))?;
        let mut fuzz = cargo();
        fuzz.env("RUSTC_BOOTSTRAP", "1")
            .args(["fuzz", "run", "--fuzz-dir"])
            .arg(root().join("fuzz"))
            .arg(target)
            .arg(&discovered)
            .arg(&seeds)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg("-rss_limit_mb=4096")
            // One input taking this long is a finding (bounded time), not a stalled run.
            .arg(format!("-timeout={INPUT_TIMEOUT_SECONDS}"))
            .arg("-print_final_stats=1");
        let started = std::time::Instant::now();
        let (outcome, mut stats) = run_collecting_stats(&mut fuzz)?;
        // A run stopped by a finding prints no `Done` line: report the time to the finding
        // (the build included).
        stats.seconds = stats.seconds.or(Some(started.elapsed().as_secs()));
        if let Err(e) = outcome {
            eprintln!("fuzz: {target} failed: {e}");
            failed.push(target.clone());
        }
        summary.push((target.clone(), stats));
    }
    eprintln!(
        "fuzz: {:<20} {:>12} {:>9} {:>10} {:>9} {:>8}",
        "target", "executions", "seconds", "exec/s", "new units", "peak MB"
    );
    for (target, stats) in &summary {
        eprintln!(
            "fuzz: {target:<20} {:>12} {:>9} {:>10} {:>9} {:>8}",
            stats.executions.map_or("?".into(), |n| n.to_string()),
            stats.seconds.map_or("?".into(), |n| n.to_string()),
            stats.per_second.map_or("?".into(), |n| n.to_string()),
            stats.new_units.map_or("?".into(), |n| n.to_string()),
            stats.peak_rss_mb.map_or("?".into(), |n| n.to_string()),
        );
    }
    if failed.is_empty() {
        eprintln!("fuzz: {} target(s) ran {seconds} s each without a finding", targets.len());
        Ok(())
    } else {
        Err(format!("fuzz targets with findings (inputs in fuzz/artifacts/): {}", failed.join(", ")))
    }
}

/// libFuzzer's final statistics (`-print_final_stats=1` and its `Done N runs in S second(s)`).
#[derive(Debug, Default)]
struct Stats {
    executions: Option<u64>,
    seconds: Option<u64>,
    per_second: Option<u64>,
    new_units: Option<u64>,
    peak_rss_mb: Option<u64>,
}

impl Stats {
    fn read(&mut self, line: &str) {
        let number = |text: &str| text.trim().parse::<u64>().ok();
        if let Some((key, value)) = line.rsplit_once(':') {
            match key.trim() {
                "stat::number_of_executed_units" => self.executions = number(value),
                "stat::average_exec_per_sec" => self.per_second = number(value),
                "stat::new_units_added" => self.new_units = number(value),
                "stat::peak_rss_mb" => self.peak_rss_mb = number(value),
                _ => {}
            }
        }
        // "Done 357303 runs in 21 second(s)"
        if let Some(rest) = line.strip_prefix("Done ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            if let [runs, "runs", "in", seconds, ..] = words.as_slice() {
                self.executions = self.executions.or(number(runs));
                self.seconds = number(seconds);
            }
        }
    }
}

/// Runs `cmd` with its standard error passed through line by line (and its statistics read);
/// `Err` in the first element when it fails.
fn run_collecting_stats(cmd: &mut Command) -> Result<(Result<()>, Stats)> {
    let mut child = cmd.stderr(Stdio::piped()).spawn().map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
    let mut stats = Stats::default();
    if let Some(stderr) = child.stderr.take() {
        let mut out = std::io::stderr();
        for line in BufReader::new(stderr).split(b'\n') {
            let Ok(line) = line else { break };
            let _ = out.write_all(&line).and_then(|()| out.write_all(b"\n"));
            stats.read(&String::from_utf8_lossy(&line));
        }
    }
    let status = child.wait().map_err(|e| format!("waiting for cargo fuzz: {e}"))?;
    let outcome = if status.success() { Ok(()) } else { Err(format!("cargo fuzz exited with {status}")) };
    Ok((outcome, stats))
}

fn parse_seconds(args: &[String]) -> Result<u64> {
    match args {
        [] => Ok(DEFAULT_SECONDS),
        [flag, n] if flag == "--seconds" => n.parse().map_err(|_| format!("--seconds wants a number, got `{n}`")),
        _ => Err("usage: cargo xtask fuzz [--seconds N]".to_owned()),
    }
}

/// The names of `fuzz/fuzz_targets/*.rs`, sorted.
fn targets() -> Result<Vec<String>> {
    let dir = root().join("fuzz/fuzz_targets");
    let entries = fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    Ok(names)
}

/// The cargo-fuzz release installed when `cargo fuzz` is missing.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// Installs cargo-fuzz from crates.io unless `cargo fuzz` already runs (so repeated runs install
/// nothing). No nightly toolchain is needed: the flags cargo-fuzz passes are enabled on the
/// stable one with `RUSTC_BOOTSTRAP=1`, and its AddressSanitizer runtime ships with it.
fn ensure_cargo_fuzz() -> Result<()> {
    let present = cargo().args(["fuzz", "--version"]).output().is_ok_and(|o| o.status.success());
    if present {
        return Ok(());
    }
    eprintln!("fuzz: installing cargo-fuzz {CARGO_FUZZ_VERSION} (cargo install --locked)");
    // Built in its own target directory so the project's stays untouched.
    let build_dir = work_dir("fuzz/cargo-fuzz-build")?;
    run(cargo()
        .args(["install", "cargo-fuzz", "--version", CARGO_FUZZ_VERSION, "--locked"])
        .env("CARGO_TARGET_DIR", build_dir))
}
