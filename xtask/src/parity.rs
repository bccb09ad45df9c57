//! `cargo xtask parity [ops|preprocess|vision] [args…]`: our pipeline against the reference,
//! bit for bit.
//!
//! Each suite runs the reference side first (`crates/parity/python/<suite>.py` in the
//! project's venv: stock mlx-vlm on the stock wheels, nothing preloaded), which writes inputs and expected
//! outputs into `target/parity/<suite>/`; then our side (`parity-<suite>`, a release binary of
//! the `parity` crate) on the same inputs, which prints one table row per comparison. Extra
//! arguments go to both sides. Exits non-zero unless every row of every suite is bit-exact,
//! after the line `parity: N/M stages bit-exact`.
//!
//! The preprocess suite ends with the corpus rows: every file of Pillow's test images (which
//! setup unpacks into `.deps/corpus`), then the fuzz files of Pillow's repository that its sdist
//! leaves out (`crates/preprocess/tests/fixtures/pillow_repo`), one row each: exact, refused, a
//! listed known gap or a listed file read where Pillow refuses (passing), or differ or crashed
//! (failing); each set ends with a line such as
//! `corpus: N files: exact A / refused B / known gaps G / read where Pillow refuses R / differ C / crashed D`.
//!
//! The vision suite's reference outputs (its real-size cases take most of a first run) are kept
//! per case in `.deps/parity-cache/vision/`, named by the SHA-256 of everything they depend on:
//! every installed Python distribution and its version (the reference as pip resolved it, the
//! MLX wheels), the interpreter, the oracle scripts' source, the case's definition and seed. A
//! rerun computes only what changed; `--fresh` drops the kept outputs first.

use crate::corpus;
use crate::setup;
use project::stack::Stack;
use project::{Result, root, run};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

const SUITES: &[&str] = &["ops", "preprocess", "vision"];

pub fn main(args: &[String]) -> Result<()> {
    let (suites, extra): (Vec<&str>, &[String]) = match args.split_first() {
        Some((first, rest)) if SUITES.contains(&first.as_str()) => (vec![first.as_str()], rest),
        _ => (SUITES.to_vec(), args),
    };
    let fresh = extra.iter().any(|a| a == "--fresh");
    let extra: Vec<String> = extra.iter().filter(|a| *a != "--fresh").cloned().collect();
    setup::main()?;
    let stack = Stack::cpu();
    if fresh {
        let _ = std::fs::remove_dir_all(&stack.reference_cache);
    }
    let (exact, total) = run_suites(&stack, &suites, &extra)?;
    println!("\nparity: {exact}/{total} stages bit-exact");
    if exact == total { Ok(()) } else { Err(format!("{} stages are not bit-exact", total - exact)) }
}

/// Builds our side on `stack` and runs `suites` with the arguments `extra` on both sides;
/// returns (bit-exact rows, rows) over all of them.
pub fn run_suites(stack: &Stack, suites: &[&str], extra: &[String]) -> Result<(usize, usize)> {
    eprintln!("parity: building our side (release)");
    run(stack.cargo().args(["build", "--release", "-p", "parity", "--bins"]))?;
    let (mut exact, mut total) = (0usize, 0usize);
    for suite in suites {
        let (e, t) = run_suite(stack, suite, extra)?;
        exact += e;
        total += t;
    }
    Ok((exact, total))
}

/// Runs one suite; returns (bit-exact rows, rows).
fn run_suite(stack: &Stack, suite: &str, extra: &[String]) -> Result<(usize, usize)> {
    let dir = stack.target_dir.join("parity").join(suite);
    reference_side(stack, suite, &dir, extra)?;
    our_side(stack, &stack.release_binary(&format!("parity-{suite}")), suite, &dir, extra)
}

/// The reference side of `suite` (`crates/parity/python/<suite>.py` with the arguments
/// `extra`) on `stack`, writing its inputs and outputs into `dir`; the vision suite keeps its
/// reference outputs in the stack's cache.
pub fn reference_side(stack: &Stack, suite: &str, dir: &Path, extra: &[String]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    eprintln!("parity {suite}: reference side");
    let script = root().join(format!("crates/parity/python/{suite}.py"));
    let mut reference = stack.reference(&script);
    reference.arg("--out").arg(dir).args(extra);
    if suite == "vision" {
        reference.arg("--cache").arg(stack.reference_cache.join(suite));
    }
    if suite == "preprocess" {
        reference.arg("--corpus").arg(corpus::images());
    }
    run(reference)
}

/// Our side of `suite`: `binary` (a `parity-<suite>` built for `stack`) on the reference's
/// `dir` with the arguments `extra`, its table printed as it comes; returns (bit-exact rows,
/// rows) from its summary line.
pub fn our_side(stack: &Stack, binary: &Path, suite: &str, dir: &Path, extra: &[String]) -> Result<(usize, usize)> {
    eprintln!("parity {suite}: our side");
    let mut child = stack
        .ours(binary)
        .arg(dir)
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    let mut summary = None;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(std::result::Result::ok) {
            println!("{line}");
            if let Some(counts) = line.strip_prefix("parity-summary: ") {
                summary = parse_counts(counts);
            }
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    match summary {
        Some(counts) => Ok(counts),
        None => Err(format!("parity-{suite} ended ({status}) without a summary line")),
    }
}

fn parse_counts(text: &str) -> Option<(usize, usize)> {
    let (exact, total) = text.trim().split_once('/')?;
    Some((exact.parse().ok()?, total.parse().ok()?))
}
