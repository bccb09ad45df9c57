//! `cargo xtask fuzz [--seconds N] [--target NAME]`: every cargo-fuzz target of `fuzz/Cargo.toml`
//! (or the one named), N seconds each (default 60).
//!
//! cargo-fuzz is installed from crates.io when missing. Only a stable toolchain is available, so
//! the nightly flags cargo-fuzz passes (`-Zsanitizer=address`, sancov) are enabled with
//! `RUSTC_BOOTSTRAP=1`. Each target starts from its checked-in corpus
//! `fuzz/corpus/<target>/` (read only); inputs the run discovers go to
//! `<target dir>/fuzz/corpus/<target>/` so the checked-in corpus stays small.
//!
//! The per-format decode targets (`decode_<format>`, one per format `preprocess` reads) are
//! `fuzz/Cargo.toml`'s section generated from `preprocess`'s format table, which also lists each
//! one's file extensions (`[package.metadata.decode-seeds]`); the targets and the extensions are
//! read with `cargo metadata`. Each is seeded with Pillow's test images of its format as setup
//! unpacks them (`.deps/corpus/…/Tests/images`, chosen by those extensions, the files no longer
//! than [`DECODE_MAX_LEN`]), copied afresh into `<target dir>/fuzz/seeds/<target>/` on every run;
//! nothing of that corpus is checked in.
//!
//! Every target runs under libFuzzer's bounds: `-rss_limit_mb` (memory), `-timeout` (one
//! input's time), and for the decode targets `-max_len` (input size). A crash, a panic, a leak,
//! an out-of-memory or an input past the timeout fails the command; libFuzzer leaves the input
//! in `fuzz/artifacts/<target>/`, and the summary names it.
//!
//! libFuzzer's output is passed through; its final statistics are collected into a summary
//! printed at the end: per target, the executions, the seconds run, executions per second, the
//! inputs it added to the corpus and its peak resident set.
//!
//! The decode targets (and `decode_preprocess`) build without the fuzz crate's `model`
//! feature (`--no-default-features`): `preprocess` and its decoders only. The checkpoint-level
//! targets build with it, which adds the encoder crates and mlx-c.
//!
//! Not part of `cargo xtask test`: the fuzz build is a second cold build of every dependency
//! (release, AddressSanitizer, one codegen unit; libjpeg-turbo included, and mlx-c for the
//! checkpoint-level targets), plus ~1.5 CPU-minutes to install cargo-fuzz. Every finding so far
//! is a unit test instead, which CI runs.

use crate::corpus;
use project::{Result, cargo, output, root, run, work_dir};
use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

const DEFAULT_SECONDS: u64 = 60;

/// libFuzzer's limit for one input (its default is 20 minutes).
const INPUT_TIMEOUT_SECONDS: u64 = 30;

/// libFuzzer's limit for one decode target's input: a decoder given a valid header decodes
/// that image in well under a second even under AddressSanitizer.
const DECODE_TIMEOUT_SECONDS: u64 = 10;

/// libFuzzer's memory limit (resident set) for every target.
const RSS_LIMIT_MB: u64 = 4096;

/// libFuzzer's `-max_len` for the decode targets (the longest input one is given; longer seeds
/// are left out).
const DECODE_MAX_LEN: u64 = 1 << 17;

/// Targets built without cargo-fuzz's debug assertions and overflow checks (AddressSanitizer
/// stays): AVIF's AV1 decoder (`re_rav1d`) checks every plane borrow at run time under debug
/// assertions, which makes a 128x128 seed take longer than the per-input time bound.
const UNCHECKED_BUILD_TARGETS: &[&str] = &["decode_avif"];

/// The fuzz crate's targets, as `fuzz/Cargo.toml` declares them.
#[derive(Debug)]
struct FuzzTargets {
    /// Every `[[bin]]`, sorted.
    names: Vec<String>,
    /// The decode targets' seed extensions (`[package.metadata.decode-seeds]`), by target.
    seeds: BTreeMap<String, Vec<String>>,
}

pub fn main(args: &[String]) -> Result<()> {
    let options = parse_args(args)?;
    let seconds = options.seconds;
    ensure_cargo_fuzz()?;
    let FuzzTargets { names: mut targets, seeds } = fuzz_targets()?;
    if let Some(only) = &options.target {
        if !targets.contains(only) {
            return Err(format!("no fuzz target `{only}` (targets: {})", targets.join(", ")));
        }
        targets.retain(|t| t == only);
    }
    if targets.is_empty() {
        return Err("no fuzz targets in fuzz/fuzz_targets".to_owned());
    }
    let mut failed = Vec::new();
    let mut summary = Vec::new();
    for target in &targets {
        eprintln!("fuzz: {target} for {seconds} s");
        let discovered = work_dir(&format!("fuzz/corpus/{target}"))?;
        let decode = seeds.get(target);
        let mut fuzz = cargo();
        fuzz.env("RUSTC_BOOTSTRAP", "1").args(["fuzz", "run"]);
        if target.starts_with("decode_") {
            // A decode target needs `preprocess` only: without the `model` feature the build
            // leaves out the encoder crates and mlx-c.
            fuzz.arg("--no-default-features");
        }
        if UNCHECKED_BUILD_TARGETS.contains(&target.as_str()) {
            // `-O`: cargo-fuzz's debug assertions off (see UNCHECKED_BUILD_TARGETS).
            fuzz.arg("-O");
        }
        fuzz.arg("--fuzz-dir").arg(root().join("fuzz")).arg(target).arg(&discovered);
        let checked_in = root().join("fuzz/corpus").join(target);
        if checked_in.is_dir() {
            fuzz.arg(&checked_in);
        }
        if let Some(extensions) = decode {
            let (seeds, count) = copy_seeds(target, extensions)?;
            eprintln!("fuzz: {target} seeded with {count} file(s) of Pillow's test images");
            fuzz.arg(seeds);
        }
        let timeout = if decode.is_some() { DECODE_TIMEOUT_SECONDS } else { INPUT_TIMEOUT_SECONDS };
        fuzz.arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg(format!("-rss_limit_mb={RSS_LIMIT_MB}"))
            // One input taking this long is a finding (bounded time), not a stalled run.
            .arg(format!("-timeout={timeout}"))
            .arg("-print_final_stats=1");
        if decode.is_some() {
            fuzz.arg(format!("-max_len={DECODE_MAX_LEN}"));
        }
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
        "fuzz: {:<20} {:>12} {:>9} {:>10} {:>9} {:>8}  finding",
        "target", "executions", "seconds", "exec/s", "new units", "peak MB"
    );
    for (target, stats) in &summary {
        eprintln!(
            "fuzz: {target:<20} {:>12} {:>9} {:>10} {:>9} {:>8}  {}",
            stats.executions.map_or("?".into(), |n| n.to_string()),
            stats.seconds.map_or("?".into(), |n| n.to_string()),
            stats.per_second.map_or("?".into(), |n| n.to_string()),
            stats.new_units.map_or("?".into(), |n| n.to_string()),
            stats.peak_rss_mb.map_or("?".into(), |n| n.to_string()),
            stats.artifact.as_deref().unwrap_or("none"),
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
    /// Where libFuzzer wrote the input of a finding (`Test unit written to <path>`).
    artifact: Option<String>,
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
        if let Some((_, path)) = line.split_once("Test unit written to ") {
            self.artifact = Some(path.trim().to_owned());
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

/// The command line: how long each target runs, and which one (all when `None`).
#[derive(Debug, PartialEq)]
struct Options {
    seconds: u64,
    target: Option<String>,
}

fn parse_args(args: &[String]) -> Result<Options> {
    const USAGE: &str = "usage: cargo xtask fuzz [--seconds N] [--target NAME]";
    let mut options = Options { seconds: DEFAULT_SECONDS, target: None };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} wants a value\n{USAGE}"))?;
        match flag.as_str() {
            "--seconds" => {
                options.seconds = value.parse().map_err(|_| format!("--seconds wants a number, got `{value}`"))?;
            }
            "--target" => options.target = Some(value.clone()),
            _ => return Err(format!("unknown argument `{flag}`\n{USAGE}")),
        }
    }
    Ok(options)
}

/// Copies the corpus files seeding `target` (those with one of `extensions`, at most
/// [`DECODE_MAX_LEN`] bytes) into a fresh `<target dir>/fuzz/seeds/<target>/`; returns it and
/// how many were copied. Without the corpus (setup not run) the directory stays empty, with a
/// note.
fn copy_seeds(target: &str, extensions: &[String]) -> Result<(std::path::PathBuf, usize)> {
    let seeds = work_dir(&format!("fuzz/seeds/{target}"))?;
    fs::remove_dir_all(&seeds)
        .and_then(|()| fs::create_dir_all(&seeds))
        .map_err(|e| format!("{}: {e}", seeds.display()))?;
    let images = corpus::images();
    if !images.is_dir() {
        eprintln!("fuzz: {} not there (run `cargo xtask setup`): {target} starts unseeded", images.display());
        return Ok((seeds, 0));
    }
    let mut count = 0;
    for file in seed_files(&images, extensions, DECODE_MAX_LEN)? {
        let name = file.strip_prefix(&images).unwrap_or(&file).to_string_lossy().replace('/', "__");
        fs::copy(&file, seeds.join(name)).map_err(|e| format!("copying {}: {e}", file.display()))?;
        count += 1;
    }
    Ok((seeds, count))
}

/// The files under `dir` (recursively) with one of `extensions` (any case) and at most
/// `max_len` bytes, sorted.
fn seed_files(dir: &Path, extensions: &[String], max_len: u64) -> Result<Vec<std::path::PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?.filter_map(|e| e.ok()) {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                pending.push(path);
                continue;
            }
            let extension = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
            if meta.len() <= max_len && extension.is_some_and(|e| extensions.contains(&e)) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The targets `fuzz/Cargo.toml` declares, read with `cargo metadata` (no dependency resolved).
fn fuzz_targets() -> Result<FuzzTargets> {
    let manifest = root().join("fuzz/Cargo.toml");
    let json =
        output(cargo().args(["metadata", "--no-deps", "--format-version", "1", "--manifest-path"]).arg(&manifest))?;
    parse_fuzz_targets(&json).map_err(|e| format!("{}: {e}", manifest.display()))
}

/// [`fuzz_targets`] from `cargo metadata`'s JSON.
fn parse_fuzz_targets(json: &str) -> Result<FuzzTargets> {
    let metadata: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("cargo metadata: {e}"))?;
    let package = metadata["packages"].get(0).ok_or("cargo metadata lists no package")?;
    let is_bin = |t: &&serde_json::Value| t["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "bin"));
    let mut names: Vec<String> = package["targets"]
        .as_array()
        .ok_or("no targets")?
        .iter()
        .filter(is_bin)
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    let mut seeds = BTreeMap::new();
    for (target, extensions) in
        package["metadata"]["decode-seeds"].as_object().ok_or("no package.metadata.decode-seeds")?
    {
        let extensions = extensions.as_array().ok_or_else(|| format!("decode-seeds.{target} is not a list"))?;
        let extensions: Option<Vec<String>> = extensions.iter().map(|e| e.as_str().map(str::to_owned)).collect();
        let extensions = extensions.ok_or_else(|| format!("decode-seeds.{target} holds a non-string"))?;
        if !names.contains(target) {
            return Err(format!("decode-seeds.{target} seeds no [[bin]]"));
        }
        seeds.insert(target.clone(), extensions);
    }
    Ok(FuzzTargets { names, seeds })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn reads_the_seconds_and_the_target() {
        assert_eq!(parse_args(&[]).unwrap(), Options { seconds: DEFAULT_SECONDS, target: None });
        let both = parse_args(&args(&["--target", "decode_png", "--seconds", "5"])).unwrap();
        assert_eq!(both, Options { seconds: 5, target: Some("decode_png".to_owned()) });
        assert!(parse_args(&args(&["--seconds"])).is_err());
        assert!(parse_args(&args(&["--seconds", "x"])).is_err());
        assert!(parse_args(&args(&["--jobs", "2"])).is_err());
    }

    #[test]
    fn the_targets_and_the_decode_seeds_come_from_the_fuzz_manifest() {
        let targets = fuzz_targets().unwrap();
        for name in ["decode_preprocess", "decode_png", "decode_tiff", "model_config"] {
            assert!(targets.names.iter().any(|n| n == name), "{name} not in {:?}", targets.names);
        }
        assert_eq!(
            targets.seeds.get("decode_png").map(Vec::as_slice),
            Some(&["png".to_owned(), "apng".to_owned()][..])
        );
        // Every decode target but the whole-pipeline one is a format's, with its seeds.
        let per_format = targets.names.iter().filter(|n| n.starts_with("decode_") && *n != "decode_preprocess");
        assert!(per_format.clone().count() >= 27);
        for name in per_format {
            assert!(targets.seeds.get(name).is_some_and(|e| !e.is_empty()), "{name} has no seeds");
        }
    }

    #[test]
    fn seeds_naming_no_target_are_refused() {
        let json = r#"{"packages": [{"targets": [{"kind": ["bin"], "name": "decode_png"}],
            "metadata": {"decode-seeds": {"decode_png": ["png"], "decode_gone": ["x"]}}}]}"#;
        assert!(parse_fuzz_targets(json).unwrap_err().contains("decode_gone"));
        let json = json.replace(r#", "decode_gone": ["x"]"#, "");
        let targets = parse_fuzz_targets(&json).unwrap();
        assert_eq!(targets.names, ["decode_png"]);
        assert_eq!(targets.seeds["decode_png"], ["png"]);
    }

    #[test]
    fn seeds_are_the_files_of_the_target_extensions_within_max_len() {
        let dir = std::env::temp_dir().join(format!("xtask-fuzz-seeds-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("a.PNG"), b"small").unwrap();
        fs::write(dir.join("sub/b.png"), b"small").unwrap();
        fs::write(dir.join("c.gif"), b"other format").unwrap();
        fs::write(dir.join("d.png"), vec![0u8; 100]).unwrap();
        let found = seed_files(&dir, &["png".to_owned()], 10).unwrap();
        assert_eq!(found, vec![dir.join("a.PNG"), dir.join("sub/b.png")]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
