//! `cargo xtask bench embed [--images N] [--budget N] [--dtypes native,f32] [--actors 1,2]
//! [--ray-dtype D] [--rss-images 200,2000] [--rss-budget N] [--rss-dtype D] [--model e2b|tiny]`:
//! corpus throughput and memory, written into the `embed` section of BENCHMARKS.md. Defaults:
//! 200 images at budget 280, Ray in the native dtype, RSS in f32 at budget 70.
//!
//! - `gemma-vision embed` (release) on `--images` 640×480 JPEGs at `--budget`, once per dtype:
//!   images per second of the job (its own summary: decode, encode and shard writes, model load
//!   excluded) and of the whole process (load included);
//! - `python -m gemma_vision.ray_embed` (the release wheel, installed into `.deps/venv`) on the
//!   same corpus, `--ray-dtype`, on a local Ray instance of all cores, once per `--actors` count:
//!   its images per second (the job from the dataset to the last Parquet file, actors' model
//!   loads included) and of the whole process (Ray's start included), and the ratio to `embed`;
//! - the peak RSS of `embed` over corpora of each `--rss-images` size (`--rss-dtype` at
//!   `--rss-budget`): it must not grow with the corpus.
//!
//! The model is the e2b-shaped tower of `bench_e2e.py make` (shared with `bench e2e`), or the
//! checked-in tiny checkpoint with `--model tiny` (to try the harness in seconds). Corpora come
//! from `crates/python/bench/embed_corpus.py` (200 distinct photos, hard links beyond).

use crate::bench::write_section;
use crate::machine::{Machine, load_average};
use crate::project::{Result, cargo, cmd, oracle_python, output, python, release_binary, root, run, work_dir};
use crate::setup;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What the command line selected.
#[derive(Debug)]
struct Selection {
    images: usize,
    budget: u32,
    dtypes: Vec<String>,
    actors: Vec<usize>,
    ray_dtype: String,
    rss_images: Vec<usize>,
    rss_budget: u32,
    rss_dtype: String,
    model: String,
}

fn parse(args: &[String]) -> Result<Selection> {
    let mut s = Selection {
        images: 200,
        budget: 280,
        dtypes: vec!["native".into(), "f32".into()],
        actors: vec![1, 2],
        ray_dtype: "native".into(),
        rss_images: vec![200, 2000],
        rss_budget: 70,
        rss_dtype: "f32".into(),
        model: "e2b".into(),
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<usize>().map_err(|_| format!("{flag}: `{v}` is not a number"));
        let list = |v: &str| v.split(',').filter(|x| !x.is_empty()).map(number).collect::<Result<Vec<_>>>();
        match flag.as_str() {
            "--images" => s.images = number(value)?,
            "--budget" => s.budget = number(value)? as u32,
            "--dtypes" => s.dtypes = value.split(',').filter(|x| !x.is_empty()).map(str::to_owned).collect(),
            "--actors" => s.actors = list(value)?,
            "--ray-dtype" => s.ray_dtype = value.clone(),
            "--rss-images" => s.rss_images = list(value)?,
            "--rss-budget" => s.rss_budget = number(value)? as u32,
            "--rss-dtype" => s.rss_dtype = value.clone(),
            "--model" => s.model = value.clone(),
            other => return Err(format!("unknown flag `{other}` (see the doc of xtask/src/bench_embed.rs)")),
        }
    }
    Ok(s)
}

/// One timed run.
#[derive(Debug)]
struct Timed {
    /// Images per second as the job reports it, and of the whole process.
    job_rate: f64,
    process_rate: f64,
    /// Peak RSS in MiB, when the job reports it.
    peak_mib: Option<f64>,
}

pub fn main(args: &[String]) -> Result<()> {
    let selection = parse(args)?;
    setup::main()?;
    let dir = work_dir("bench/embed")?;
    let load_before = load_average();

    eprintln!("bench embed: building gemma-vision (release)");
    run(cargo().args(["build", "--release", "--quiet", "-p", "cli"]))?;
    let binary = release_binary("gemma-vision");
    if !selection.actors.is_empty() {
        eprintln!("bench embed: building and installing the release wheel");
        let wheels = dir.join("wheels");
        let _ = fs::remove_dir_all(&wheels);
        let mut build = cmd(python(), &["-m", "maturin", "build", "--release", "--quiet"]);
        run(build
            .args(["--manifest-path", "crates/python/Cargo.toml", "--interpreter"])
            .arg(python())
            .arg("--out")
            .arg(&wheels))?;
        let wheel = fs::read_dir(&wheels)
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "whl"))
            .ok_or("maturin wrote no wheel")?;
        run(cmd(python(), &["-m", "pip", "install", "-q", "--force-reinstall", "--no-deps"]).arg(wheel))?;
    }

    let model = model_dir(&selection.model)?;
    let corpus = |count: usize| -> Result<PathBuf> {
        let images = dir.join(format!("corpus-{count}"));
        let script = root().join("crates/python/bench/embed_corpus.py");
        let mut make = cmd(python(), &[]);
        run(make.arg(script).arg("--out").arg(&images).args(["--count", &count.to_string()]))?;
        Ok(images)
    };

    let images = corpus(selection.images)?;
    let budget = selection.budget.to_string();
    let mut table = String::new();
    let mut embed_rate = None;
    for dtype in &selection.dtypes {
        eprintln!("bench embed: gemma-vision embed, {} images, budget {budget}, {dtype}", selection.images);
        let out = fresh(&dir.join(format!("out-embed-{dtype}")))?;
        let mut command = Command::new(&binary);
        command.arg("embed").arg("--model").arg(&model).arg("--images").arg(&images).arg("--out").arg(&out);
        command.args(["--max-soft-tokens", &budget, "--dtype", dtype]);
        let timed = timed(command, selection.images)?;
        if *dtype == selection.ray_dtype {
            embed_rate = Some(timed.job_rate);
        }
        let peak = timed.peak_mib.map_or("?".to_owned(), |m| format!("{m:.0} MiB"));
        writeln!(table, "| `embed`, {dtype} | {:.3} | {:.3} | {peak} | |", timed.job_rate, timed.process_rate)
            .map_err(|e| e.to_string())?;
    }
    for &actors in &selection.actors {
        let dtype = &selection.ray_dtype;
        eprintln!("bench embed: ray_embed, {} images, budget {budget}, {dtype}, {actors} actor(s)", selection.images);
        let out = fresh(&dir.join(format!("out-ray-{actors}")))?;
        let mut command = Command::new(python());
        command.args(["-m", "gemma_vision.ray_embed", "--model"]).arg(&model).arg("--images").arg(&images);
        command.arg("--out").arg(&out).args(["--max-soft-tokens", &budget, "--dtype", dtype]);
        command.args(["--actors", &actors.to_string()]);
        let timed = timed(command, selection.images)?;
        let ratio = embed_rate.map_or("".to_owned(), |e| format!("{:.2}× `embed`'s", timed.job_rate / e));
        writeln!(
            table,
            "| Ray Data, {dtype}, {actors} actor(s) | {:.3} | {:.3} | | {ratio} |",
            timed.job_rate, timed.process_rate
        )
        .map_err(|e| e.to_string())?;
    }
    let mut rss = String::new();
    for &count in &selection.rss_images {
        eprintln!("bench embed: peak RSS, {count} images, budget {}, {}", selection.rss_budget, selection.rss_dtype);
        let images = corpus(count)?;
        let out = fresh(&dir.join(format!("out-rss-{count}")))?;
        let mut command = Command::new(&binary);
        command.arg("embed").arg("--model").arg(&model).arg("--images").arg(&images).arg("--out").arg(&out);
        command.args(["--max-soft-tokens", &selection.rss_budget.to_string(), "--dtype", &selection.rss_dtype]);
        let timed = timed(command, count)?;
        let peak = timed.peak_mib.map_or("?".to_owned(), |m| format!("{m:.0} MiB"));
        writeln!(rss, "| {count} | {peak} | {:.3} |", timed.job_rate).map_err(|e| e.to_string())?;
    }

    let machine = Machine::read();
    let mut section = String::new();
    let _ = writeln!(section, "## Corpus jobs: `embed` and Ray Data\n");
    let _ = writeln!(
        section,
        "{} ({}), {} cores{}, {}. Load average before: {load_before}; after: {}.\n",
        machine.model,
        machine.isa.join(", "),
        machine.cores,
        machine.memory,
        machine.os,
        load_average()
    );
    let _ = writeln!(
        section,
        "Model `{}`; {} 640×480 JPEGs (200 distinct photos, hard links beyond), budget {budget}. \"job\": the \
         command's own count (first image to last shard or Parquet file; Ray's includes its actors' model \
         loads); \"process\": the whole command, model load and Ray's start included.\n",
        selection.model, selection.images
    );
    if !table.is_empty() {
        let _ = writeln!(section, "| run | images/s (job) | images/s (process) | peak RSS | against `embed` |");
        let _ = writeln!(section, "| --- | ---: | ---: | ---: | --- |");
        section.push_str(&table);
        section.push('\n');
    }
    if !rss.is_empty() {
        let _ = writeln!(
            section,
            "Peak RSS of `embed` by corpus size ({} at budget {}): it stays flat, memory is bounded by the batch and \
             the shard, not the corpus.\n",
            selection.rss_dtype, selection.rss_budget
        );
        let _ = writeln!(section, "| images | peak RSS | images/s (job) |");
        let _ = writeln!(section, "| ---: | ---: | ---: |");
        section.push_str(&rss);
    }
    print!("{section}");
    write_section("embed", &section)
}

/// The model directory: the e2b-shaped tower of `bench_e2e.py make`, or the tiny fixture.
fn model_dir(name: &str) -> Result<PathBuf> {
    if name == "tiny" {
        return Ok(root().join("crates/vision/tests/fixtures/tiny-clipped/model"));
    }
    let e2e = work_dir("bench/e2e")?;
    let script = root().join("crates/parity/python/bench_e2e.py");
    let made = output(oracle_python(&script).arg("--out").arg(&e2e).arg("make"))?;
    made.lines()
        .filter(|line| line.contains(&format!("\"model\": \"{name}\"")))
        .find_map(|line| crate::json::json_string(line, "dir"))
        .map(PathBuf::from)
        .ok_or_else(|| format!("bench_e2e.py make made no model `{name}`"))
}

/// `dir`, emptied.
fn fresh(dir: &Path) -> Result<PathBuf> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    Ok(dir.to_path_buf())
}

/// Runs `command` (which embeds `images` images), and reads its summary.
fn timed(mut command: Command, images: usize) -> Result<Timed> {
    let started = Instant::now();
    let out = command.output().map_err(|e| format!("cannot run {command:?}: {e}"))?;
    let seconds = started.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("{command:?} failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let job_rate = stdout
        .split(", ")
        .find_map(|part| part.strip_suffix(" images/s"))
        .and_then(|n| n.trim().parse::<f64>().ok())
        .ok_or_else(|| format!("no images/s in the output of {command:?}: {stdout}"))?;
    let peak_mib = stdout
        .lines()
        .find_map(|line| line.strip_prefix("peak memory (RSS): "))
        .and_then(|m| m.trim_end_matches(" MiB").parse::<f64>().ok());
    Ok(Timed { job_rate, process_rate: images as f64 / seconds, peak_mib })
}
