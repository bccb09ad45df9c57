//! `cargo xtask bench embed`: corpus throughput and memory of `gemma-vision embed` and of the
//! Ray Data job (`cargo xtask bench embed --help` for the flags), written into the `embed`
//! section of BENCHMARKS.md from `bench/templates/embed.md`. Defaults: 200 images at budget 280,
//! Ray in the native dtype, RSS in f32 at budget 70.
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
//! The model is one of `bench_e2e.py make`'s checkpoints (shared with `bench e2e`; the e2b-shaped
//! tower by default), or the checked-in tiny checkpoint with `--model tiny` (to try the harness
//! in seconds). Corpora come from `bench/python/embed_corpus.py` (200 distinct photos,
//! hard links beyond).
//!
//! At the defaults a pass over 200 images at budget 280 takes about 30 min native and 48 min
//! in f32 on a 2-core machine, and a run makes three native passes (`embed`, Ray with 1 and 2
//! actors) and one f32 pass; `--images 24 --rss-images 200,2000 --rss-budget 16` still encodes
//! three full batches of 8 per pass after the model load.

use crate::Setup;
use crate::machine::{Load, Machine};
use crate::{template, write_section};
use project::{Result, cargo, cmd, oracle_python, output, python, release_binary, root, run, work_dir};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What the command line selects.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// 640×480 JPEGs in the throughput corpus
    #[arg(long, default_value_t = 200)]
    images: usize,
    /// Soft-token budget of the throughput runs
    #[arg(long, default_value_t = 280)]
    budget: u32,
    /// Dtypes of the `embed` throughput runs (the flag without a value: none)
    #[arg(long, value_delimiter = ',', num_args = 0.., default_values = ["native", "f32"],
          value_parser = ["native", "f32"])]
    dtypes: Vec<String>,
    /// Actor counts of the Ray Data runs (the flag without a value: no Ray run)
    #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = [1, 2])]
    actors: Vec<usize>,
    /// Dtype of the Ray Data runs (compared with `embed`'s in that dtype)
    #[arg(long, default_value = "native", value_parser = ["native", "f32"])]
    ray_dtype: String,
    /// Corpus sizes of the peak-RSS runs (the flag without a value: none)
    #[arg(long, value_delimiter = ',', num_args = 0.., default_values_t = [200, 2000])]
    rss_images: Vec<usize>,
    /// Soft-token budget of the peak-RSS runs
    #[arg(long, default_value_t = 70)]
    rss_budget: u32,
    /// Dtype of the peak-RSS runs
    #[arg(long, default_value = "f32", value_parser = ["native", "f32"])]
    rss_dtype: String,
    /// A model of `bench_e2e.py make` (e2b, 31b-shaped, unified-12b), or `tiny` (the checked-in
    /// tiny-clipped checkpoint)
    #[arg(long, default_value = "e2b")]
    model: String,
}

/// One timed run.
#[derive(Debug)]
struct Timed {
    /// Images per second of the job (its summary's images over its seconds), and of the whole
    /// process.
    job_rate: f64,
    process_rate: f64,
    /// Peak RSS in MiB, when the job reports it.
    peak_mib: Option<f64>,
}

pub fn main(args: &Args, setup: Setup) -> Result<()> {
    setup()?;
    let dir = work_dir("bench/embed")?;
    let load = Load::start();

    eprintln!("bench embed: building gemma-vision (release)");
    run(cargo().args(["build", "--release", "-p", "gemma-vision"]))?;
    let binary = release_binary("gemma-vision");
    if !args.actors.is_empty() {
        super::wheel::install_release_wheel(&dir)?;
    }

    let model = model_dir(&args.model)?;
    let corpus = |count: usize| -> Result<PathBuf> {
        let images = dir.join(format!("corpus-{count}"));
        let script = root().join("bench/python/embed_corpus.py");
        let mut make = cmd(python(), &[]);
        run(make.arg(script).arg("--out").arg(&images).args(["--count", &count.to_string()]))?;
        Ok(images)
    };
    let embed = |images: &Path, count: usize, budget: u32, dtype: &str, out: &str| -> Result<Timed> {
        let out = fresh(&dir.join(out))?;
        let mut command = Command::new(&binary);
        command.arg("embed").arg("--model").arg(&model).arg("--images").arg(images).arg("--out").arg(&out);
        command.args(["--max-soft-tokens", &budget.to_string(), "--dtype", dtype]);
        timed(command, count)
    };

    let mut table = String::new();
    if !args.dtypes.is_empty() || !args.actors.is_empty() {
        let images = corpus(args.images)?;
        let mut embed_rate = None;
        for dtype in &args.dtypes {
            eprintln!("bench embed: gemma-vision embed, {} images, budget {}, {dtype}", args.images, args.budget);
            let timed = embed(&images, args.images, args.budget, dtype, &format!("out-embed-{dtype}"))?;
            if *dtype == args.ray_dtype {
                embed_rate = Some(timed.job_rate);
            }
            let peak = timed.peak_mib.map_or("?".to_owned(), |m| format!("{m:.0} MiB"));
            let _ =
                writeln!(table, "| `embed`, {dtype} | {:.3} | {:.3} | {peak} | |", timed.job_rate, timed.process_rate);
        }
        for &actors in &args.actors {
            let dtype = &args.ray_dtype;
            eprintln!(
                "bench embed: ray_embed, {} images, budget {}, {dtype}, {actors} actor(s)",
                args.images, args.budget
            );
            let out = fresh(&dir.join(format!("out-ray-{actors}")))?;
            let mut command = Command::new(python());
            command.args(["-m", "gemma_vision.ray_embed", "--model"]).arg(&model).arg("--images").arg(&images);
            command.arg("--out").arg(&out).args(["--max-soft-tokens", &args.budget.to_string(), "--dtype", dtype]);
            command.args(["--actors", &actors.to_string()]);
            let timed = timed(command, args.images)?;
            let ratio = embed_rate.map_or(String::new(), |e| format!("{:.2}× `embed`'s", timed.job_rate / e));
            let _ = writeln!(
                table,
                "| Ray Data, {dtype}, {actors} actor(s) | {:.3} | {:.3} | | {ratio} |",
                timed.job_rate, timed.process_rate
            );
        }
    }
    let mut rss = String::new();
    for &count in &args.rss_images {
        eprintln!("bench embed: peak RSS, {count} images, budget {}, {}", args.rss_budget, args.rss_dtype);
        let images = corpus(count)?;
        let timed = embed(&images, count, args.rss_budget, &args.rss_dtype, &format!("out-rss-{count}"))?;
        let peak = timed.peak_mib.map_or("?".to_owned(), |m| format!("{m:.0} MiB"));
        let _ = writeln!(rss, "| {count} | {peak} | {:.3} |", timed.job_rate);
    }

    let table = if table.is_empty() {
        "(not run)".to_owned()
    } else {
        format!(
            "| run | images/s (job) | images/s (process) | peak RSS | against `embed` |\n| --- | ---: | ---: | ---: | --- |\n{}",
            table.trim_end()
        )
    };
    let rss = if rss.is_empty() {
        "(not run)".to_owned()
    } else {
        format!("| images | peak RSS | images/s (job) |\n| ---: | ---: | ---: |\n{}", rss.trim_end())
    };
    let section = template::render(
        "embed",
        &[
            ("machine", format!("{}.", Machine::read().describe())),
            ("load", load.finish().describe()),
            ("model", args.model.clone()),
            ("images", args.images.to_string()),
            ("budget", args.budget.to_string()),
            ("table", table),
            ("rss_dtype", args.rss_dtype.clone()),
            ("rss_budget", args.rss_budget.to_string()),
            ("rss", rss),
        ],
    )?;
    println!("{section}");
    write_section("embed", &section)?;
    eprintln!("bench embed: wrote the `embed` section of BENCHMARKS.md");
    Ok(())
}

/// The model directory: a checkpoint of `bench_e2e.py make`, or the tiny fixture.
fn model_dir(name: &str) -> Result<PathBuf> {
    if name == "tiny" {
        return Ok(root().join("crates/vision/tests/fixtures/tiny-clipped/model"));
    }
    let e2e = work_dir("bench/e2e")?;
    let made = output(oracle_python(&root().join("bench/python/bench_e2e.py")).arg("--out").arg(&e2e).arg("make"))?;
    let models = super::e2e::parse_models(&made)?;
    let names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
    let names = names.join(", ");
    models
        .into_iter()
        .find(|m| m.name == name)
        .map(|m| m.dir)
        .ok_or_else(|| format!("--model: no model `{name}` (choose among tiny, {names})"))
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
        .lines()
        .find_map(job_rate)
        .ok_or_else(|| format!("no `embedded N image(s) … in S s` summary in the output of {command:?}: {stdout}"))?;
    let peak_mib = stdout
        .lines()
        .find_map(|line| line.strip_prefix("peak memory (RSS): "))
        .and_then(|m| m.trim_end_matches(" MiB").parse::<f64>().ok());
    Ok(Timed { job_rate, process_rate: images as f64 / seconds, peak_mib })
}

/// The job's own images per second from its summary line, `embedded N image(s) … in S s, …`
/// (`gemma-vision embed`'s and the Ray job's): `N / S`, to the precision of its seconds rather
/// than of the rate it prints (two decimals).
fn job_rate(line: &str) -> Option<f64> {
    let rest = line.strip_prefix("embedded ")?;
    let (images, rest) = rest.split_once(" image(s)")?;
    let seconds = rest.split(", ").find_map(|part| part.split_once(" in ")?.1.strip_suffix(" s"))?;
    let (images, seconds) = (images.parse::<f64>().ok()?, seconds.parse::<f64>().ok()?);
    (seconds > 0.0).then(|| images / seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> std::result::Result<Args, clap::Error> {
        crate::parse_suite_args("embed", args)
    }

    #[test]
    fn defaults_lists_and_empty_lists() {
        let args = parse(&[]).unwrap();
        assert_eq!((args.images, args.budget, args.rss_budget), (200, 280, 70));
        assert_eq!(
            (args.dtypes.as_slice(), args.actors.as_slice()),
            (&["native".to_owned(), "f32".to_owned()][..], &[1, 2][..])
        );
        assert_eq!(args.rss_images, [200, 2000]);
        let args = parse(&["--dtypes", "f32", "--actors", "--rss-images", "50,500", "--model", "tiny"]).unwrap();
        assert_eq!(
            (args.dtypes, args.actors, args.rss_images, args.model),
            (vec!["f32".to_owned()], vec![], vec![50, 500], "tiny".to_owned())
        );
        assert!(parse(&["--dtypes", "f16"]).is_err());
        assert!(parse(&["--images", "many"]).is_err());
    }

    #[test]
    fn the_job_rate_is_images_over_the_summarys_seconds() {
        let embed = "embedded 24 image(s) (6720 soft tokens) in 300.0 s, 0.08 images/s, into 1 new shard(s) in out";
        assert_eq!(job_rate(embed), Some(0.08));
        let embed = "embedded 24 image(s) (6720 soft tokens) in 288.0 s, 0.08 images/s, into 1 new shard(s) in out";
        assert_eq!(job_rate(embed), Some(24.0 / 288.0));
        let ray = "embedded 24 image(s) in 240.0 s, 0.10 images/s, with 1 actor(s) into out; skipped 0 already there";
        assert_eq!(job_rate(ray), Some(0.1));
        assert_eq!(job_rate("embedded 0 image(s) in 0.0 s, 0.00 images/s"), None);
        assert_eq!(job_rate("peak memory (RSS): 1417 MiB"), None);
        assert_eq!(job_rate("embedded 24 image(s) (6720 soft tokens) in soon, into out"), None);
    }
}
