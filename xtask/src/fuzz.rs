//! `cargo xtask fuzz [--seconds N] [--target NAME]`: every cargo-fuzz target under
//! `fuzz/fuzz_targets/` (or the one named), N seconds each (default 60).
//!
//! cargo-fuzz is installed from crates.io when missing. Only a stable toolchain is available, so
//! the nightly flags cargo-fuzz passes (`-Zsanitizer=address`, sancov) are enabled with
//! `RUSTC_BOOTSTRAP=1`. Each target starts from its checked-in corpus
//! `fuzz/corpus/<target>/` (read only); inputs the run discovers go to
//! `<target dir>/fuzz/corpus/<target>/` so the checked-in corpus stays small.
//!
//! The per-format decode targets (`decode_<format>`, see [`DECODE_TARGETS`]) are seeded with
//! Pillow's test images of their format as setup unpacks them (`.deps/corpus/…/Tests/images`,
//! chosen by file extension, those no longer than the target's `-max_len`), copied afresh into
//! `<target dir>/fuzz/seeds/<target>/` on every run; nothing of that corpus is checked in.
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
use crate::project::{Result, cargo, root, run, work_dir};
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

/// A per-format decode target: its name, the extensions of the corpus files that seed it, and
/// the longest input it is given (`-max_len`; longer seeds are left out).
struct DecodeTarget {
    name: &'static str,
    extensions: &'static [&'static str],
    max_len: u64,
}

/// Targets built without cargo-fuzz's debug assertions and overflow checks (AddressSanitizer
/// stays): AVIF's AV1 decoder (`re_rav1d`) checks every plane borrow at run time under debug
/// assertions, which makes a 128x128 seed take longer than the per-input time bound.
const UNCHECKED_BUILD_TARGETS: &[&str] = &["decode_avif"];

/// The targets of `fuzz/fuzz_targets/decode_<format>.rs` and their seeds.
const DECODE_TARGETS: &[DecodeTarget] = &[
    DecodeTarget { name: "decode_avif", extensions: &["avif", "avifs"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_bmp", extensions: &["bmp"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_dds", extensions: &["dds"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_gif", extensions: &["gif"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_ico", extensions: &["ico"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_jpeg", extensions: &["jpg", "jpeg", "mpo"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_png", extensions: &["png", "apng"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_ppm", extensions: &["ppm", "pgm", "pbm", "pnm", "pfm"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_qoi", extensions: &["qoi"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_tga", extensions: &["tga"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_tiff", extensions: &["tif", "tiff"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_webp", extensions: &["webp"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_sgi", extensions: &["sgi", "bw", "rgb", "rgba"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_pcx", extensions: &["pcx"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_dcx", extensions: &["dcx"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_xbm", extensions: &["xbm"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_xpm", extensions: &["xpm"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_sun", extensions: &["ras", "im1"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_msp", extensions: &["msp"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_psd", extensions: &["psd"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_xvthumb", extensions: &["p7"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_imt", extensions: &["imt"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_spider", extensions: &["spider"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_gbr", extensions: &["gbr"], max_len: 1 << 17 },
    DecodeTarget { name: "decode_pixar", extensions: &["pxr"], max_len: 1 << 17 },
];

pub fn main(args: &[String]) -> Result<()> {
    let options = parse_args(args)?;
    let seconds = options.seconds;
    ensure_cargo_fuzz()?;
    let mut targets = targets()?;
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
        let decode = DECODE_TARGETS.iter().find(|d| d.name == target);
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
        if let Some(decode) = decode {
            let (seeds, count) = copy_seeds(decode)?;
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
        if let Some(decode) = decode {
            fuzz.arg(format!("-max_len={}", decode.max_len));
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

/// Copies the corpus files seeding `target` (its extensions, at most its `max_len` bytes) into
/// a fresh `<target dir>/fuzz/seeds/<target>/`; returns it and how many were copied. Without
/// the corpus (setup not run) the directory stays empty, with a note.
fn copy_seeds(target: &DecodeTarget) -> Result<(std::path::PathBuf, usize)> {
    let seeds = work_dir(&format!("fuzz/seeds/{}", target.name))?;
    fs::remove_dir_all(&seeds)
        .and_then(|()| fs::create_dir_all(&seeds))
        .map_err(|e| format!("{}: {e}", seeds.display()))?;
    let images = corpus::images();
    if !images.is_dir() {
        eprintln!("fuzz: {} not there (run `cargo xtask setup`): {} starts unseeded", images.display(), target.name);
        return Ok((seeds, 0));
    }
    let mut count = 0;
    for file in seed_files(&images, target)? {
        let name = file.strip_prefix(&images).unwrap_or(&file).to_string_lossy().replace('/', "__");
        fs::copy(&file, seeds.join(name)).map_err(|e| format!("copying {}: {e}", file.display()))?;
        count += 1;
    }
    Ok((seeds, count))
}

/// The files under `dir` (recursively) with one of `target`'s extensions (any case) and at most
/// its `max_len` bytes, sorted.
fn seed_files(dir: &Path, target: &DecodeTarget) -> Result<Vec<std::path::PathBuf>> {
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
            if meta.len() <= target.max_len && extension.is_some_and(|e| target.extensions.contains(&e.as_str())) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
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
    fn every_decode_target_has_its_source_file() {
        let names = targets().unwrap();
        for target in DECODE_TARGETS {
            assert!(names.iter().any(|n| n == target.name), "no fuzz/fuzz_targets/{}.rs", target.name);
        }
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
        let target = DecodeTarget { name: "decode_png", extensions: &["png"], max_len: 10 };
        let found = seed_files(&dir, &target).unwrap();
        assert_eq!(found, vec![dir.join("a.PNG"), dir.join("sub/b.png")]);
        fs::remove_dir_all(&dir).unwrap();
    }
}
