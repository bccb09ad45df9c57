//! `cargo xtask fuzz [--seconds N]`: every cargo-fuzz target under `fuzz/fuzz_targets/`, N
//! seconds each (default 60).
//!
//! cargo-fuzz is installed from crates.io when missing. Only a stable toolchain is available, so
//! the nightly flags cargo-fuzz passes (`-Zsanitizer=address`, sancov) are enabled with
//! `RUSTC_BOOTSTRAP=1`. Each target starts from its checked-in corpus
//! `fuzz/corpus/<target>/` (read only); inputs the run discovers go to
//! `<target dir>/fuzz/corpus/<target>/` so the checked-in corpus stays small. A crash, a panic,
//! a leak or an out-of-memory fails the command; libFuzzer leaves the input in
//! `fuzz/artifacts/<target>/`.

use crate::project::{Result, cargo, root, run, work_dir};
use std::fs;

const DEFAULT_SECONDS: u64 = 60;

pub fn main(args: &[String]) -> Result<()> {
    let seconds = parse_seconds(args)?;
    ensure_cargo_fuzz()?;
    let targets = targets()?;
    if targets.is_empty() {
        return Err("no fuzz targets in fuzz/fuzz_targets".to_owned());
    }
    let mut failed = Vec::new();
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
            .arg("-print_final_stats=1");
        if let Err(e) = run(&mut fuzz) {
            eprintln!("fuzz: {target} failed: {e}");
            failed.push(target.clone());
        }
    }
    if failed.is_empty() {
        eprintln!("fuzz: {} target(s) ran {seconds} s each without a finding", targets.len());
        Ok(())
    } else {
        Err(format!("fuzz targets with findings (inputs in fuzz/artifacts/): {}", failed.join(", ")))
    }
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

/// Installs cargo-fuzz from crates.io unless `cargo fuzz` already runs.
fn ensure_cargo_fuzz() -> Result<()> {
    let present = cargo().args(["fuzz", "--version"]).output().is_ok_and(|o| o.status.success());
    if present {
        return Ok(());
    }
    eprintln!("fuzz: installing cargo-fuzz (cargo install cargo-fuzz --locked)");
    // Built in its own target directory so the project's stays untouched.
    let build_dir = work_dir("fuzz/cargo-fuzz-build")?;
    run(cargo().args(["install", "cargo-fuzz", "--locked"]).env("CARGO_TARGET_DIR", build_dir))
}
