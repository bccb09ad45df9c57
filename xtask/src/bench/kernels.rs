//! `cargo xtask bench kernels [BENCH…]`: each host kernel of the `kernels` crate, timed by its
//! criterion benches (`crates/kernels/benches/*.rs`), beside the MLX primitive it replaces
//! (timed on the stock wheels by `bench/python/mlx_primitives.py`, same shapes and dtypes) and
//! beside the machine's float32 GEMM peak ([`GemmPeak`], measured before and after).
//!
//! What the table reads from each criterion benchmark, by convention:
//! - the id `<kernel>/<dtype>/<shape>`: the group is the kernel ([`KERNELS`] names the known
//!   ones and their MLX primitives), the function is the dtype (`f32`/`float32`,
//!   `bf16`/`bfloat16`), the parameter is the shape, dimensions joined by `x` in the order
//!   [`KERNELS`] gives (e.g. `gemm/f32/2520x768x3072`);
//! - the throughput (`group.throughput(Throughput::Elements(n))`): FLOPs per iteration for the
//!   kernels [`KERNELS`] marks as FLOP-counted (matmul-like: GFLOP/s and % of the GEMM peak),
//!   else the elements processed (ns per element).
//!
//! Benchmarks of other groups still get a row (time and declared throughput) without an MLX
//! column. Naming bench files runs only those and prints the table without writing it.

use crate::bench::criterion::{self, Estimate, Throughput};
use crate::bench::gemm_peak::{self, GemmPeak};
use crate::bench::machine::{Load, Machine};
use crate::bench::{template, write_section};
use crate::project::{Result, cargo, oracle_python, output, root, run, work_dir};
use crate::setup;
use serde_json::Value;
use std::fmt::Write as _;
use std::fs;

/// A kernel the table knows: its criterion group, the MLX primitive it replaces (as
/// `mlx_primitives.py` names it), its shape's dimensions and whether its throughput is FLOPs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    pub group: &'static str,
    pub primitive: &'static str,
    pub shape: &'static str,
    pub flops: bool,
}

/// Kernels and the MLX primitives they replace (issue 13's list).
pub const KERNELS: &[Kernel] = &[
    Kernel { group: "gemm", primitive: "matmul", shape: "M×K×N (x·Wᵀ)", flops: true },
    Kernel { group: "matmul", primitive: "matmul", shape: "M×K×N (x·Wᵀ)", flops: true },
    Kernel { group: "addmm", primitive: "addmm", shape: "M×K×N (c + x·Wᵀ)", flops: true },
    Kernel { group: "attention", primitive: "sdpa", shape: "heads×queries×keys×head width", flops: true },
    Kernel { group: "softmax", primitive: "softmax", shape: "rows×columns", flops: false },
    Kernel { group: "exp", primitive: "exp", shape: "elements", flops: false },
    Kernel { group: "gelu", primitive: "gelu_approx", shape: "elements", flops: false },
    Kernel { group: "rms_norm", primitive: "rms_norm", shape: "rows×width", flops: false },
    Kernel { group: "layer_norm", primitive: "layer_norm", shape: "rows×width", flops: false },
];

fn kernel(group: &str) -> Option<&'static Kernel> {
    KERNELS.iter().find(|k| k.group == group)
}

/// Which bench files to run.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Bench files of crates/kernels/benches to run (all by default; a subset prints its table
    /// without writing BENCHMARKS.md)
    benches: Vec<String>,
}

/// One benchmark with what the MLX side measured for it.
#[derive(Debug)]
struct Row {
    ours: Estimate,
    kernel: Option<&'static Kernel>,
    dtype: Option<&'static str>,
    dims: Option<Vec<u64>>,
    mlx: Option<MlxTiming>,
}

#[derive(Debug, Clone, Copy)]
struct MlxTiming {
    median: f64,
    fastest: f64,
}

/// `f32`/`float32` → `float32`, `bf16`/`bfloat16` → `bfloat16`.
fn dtype(function: Option<&str>) -> Option<&'static str> {
    match function? {
        "f32" | "float32" => Some("float32"),
        "bf16" | "bfloat16" => Some("bfloat16"),
        _ => None,
    }
}

/// `2520x768x3072` → [2520, 768, 3072].
fn dims(value: Option<&str>) -> Option<Vec<u64>> {
    value?.split('x').map(|d| d.parse().ok()).collect()
}

pub fn main(args: &Args) -> Result<()> {
    let available = bench_files()?;
    if available.is_empty() {
        return Err("the kernels crate has no criterion benches yet (crates/kernels/benches/*.rs)".to_owned());
    }
    let selected: Vec<&String> =
        available.iter().filter(|f| args.benches.is_empty() || args.benches.contains(f)).collect();
    if selected.is_empty() || selected.len() < args.benches.len() {
        return Err(format!("no such bench; choose among {}", available.join(", ")));
    }
    setup::main()?;
    let dir = work_dir("bench/kernels")?;
    let home = dir.join("criterion");
    let _ = fs::remove_dir_all(&home);
    let load = Load::start();
    eprintln!("bench kernels: float32 GEMM peak (bench/python/gemm_peak.py)");
    let peak_before = GemmPeak::measure()?;
    for file in &selected {
        eprintln!("bench kernels: {file} (criterion)");
        run(cargo()
            .args(["bench", "--quiet", "-p", "kernels", "--bench", file.as_str()])
            .env("CRITERION_HOME", &home))?;
    }
    let mut rows: Vec<Row> = criterion::read_all(&home)?
        .into_iter()
        .map(|ours| Row {
            kernel: kernel(&ours.group),
            dtype: dtype(ours.function.as_deref()),
            dims: dims(ours.value.as_deref()),
            ours,
            mlx: None,
        })
        .collect();
    eprintln!("bench kernels: the MLX primitives (bench/python/mlx_primitives.py)");
    time_mlx(&mut rows)?;
    let peak_after = GemmPeak::measure()?;
    let section = render(&rows, &[&peak_before, &peak_after], &load.finish())?;
    println!("{section}");
    if args.benches.is_empty() {
        write_section("kernels", &section)?;
        eprintln!("bench kernels: wrote the `kernels` section of BENCHMARKS.md");
    } else {
        eprintln!("bench kernels: a subset ran; BENCHMARKS.md left as it was");
    }
    Ok(())
}

/// The bench files of crates/kernels/benches (their stems), sorted.
fn bench_files() -> Result<Vec<String>> {
    let dir = root().join("crates/kernels/benches");
    let Ok(entries) = fs::read_dir(&dir) else { return Ok(Vec::new()) };
    let mut files: Vec<String> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    files.sort();
    Ok(files)
}

/// `op:dtype:d1xd2…` for `mlx_primitives.py`, when the row names a known kernel, dtype and shape.
fn spec(row: &Row) -> Option<String> {
    let (kernel, dtype, dims) = (row.kernel?, row.dtype?, row.dims.as_ref()?);
    let dims: Vec<String> = dims.iter().map(u64::to_string).collect();
    Some(format!("{}:{dtype}:{}", kernel.primitive, dims.join("x")))
}

/// Times every row's MLX primitive in one Python process.
fn time_mlx(rows: &mut [Row]) -> Result<()> {
    let specs: Vec<String> = rows.iter().filter_map(spec).collect();
    if specs.is_empty() {
        return Ok(());
    }
    let mut command = oracle_python(&root().join("bench/python/mlx_primitives.py"));
    command.args(&specs);
    let text = output(command)?;
    for line in text.lines().filter(|l| l.starts_with('{')) {
        let json: Value = serde_json::from_str(line).map_err(|e| format!("mlx_primitives.py printed `{line}`: {e}"))?;
        let (Some(id), Some(median), Some(fastest)) =
            (json["spec"].as_str(), json["median"].as_f64(), json["fastest"].as_f64())
        else {
            return Err(format!("mlx_primitives.py printed `{line}`"));
        };
        for row in rows.iter_mut().filter(|r| spec(r).as_deref() == Some(id)) {
            row.mlx = Some(MlxTiming { median, fastest });
        }
    }
    Ok(())
}

/// Work per iteration the bench declared, as (FLOPs, elements).
fn work(row: &Row) -> (Option<f64>, Option<f64>) {
    let count = match row.ours.throughput {
        Some(Throughput::Elements(n)) => Some(n as f64),
        _ => None,
    };
    match row.kernel {
        Some(k) if k.flops => (count, None),
        _ => (None, count),
    }
}

/// GFLOP/s, or ns per element, of `seconds` per iteration.
fn speed(row: &Row, seconds: f64) -> String {
    match work(row) {
        (Some(flops), _) => format!("{:.1} GFLOP/s", flops / seconds / 1e9),
        (None, Some(elements)) => format!("{:.3} ns/elem", seconds * 1e9 / elements),
        (None, None) => "—".to_owned(),
    }
}

fn render(rows: &[Row], peaks: &[&GemmPeak], load: &Load) -> Result<String> {
    let peak = gemm_peak::best(peaks);
    let mut table = String::from(
        "| kernel | dtype | shape | ours (µs) | ours | MLX primitive | MLX (µs) | MLX | ours / MLX | ours / MLX, fastest \
         samples | % GEMM peak |\n|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let ours = &row.ours;
        let mlx = row.mlx;
        let percent = match work(row) {
            (Some(flops), _) if peak > 0.0 => format!("{:.0}%", 100.0 * flops / ours.median / 1e9 / peak),
            _ => "—".to_owned(),
        };
        let _ = writeln!(
            table,
            "| {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {percent} |",
            ours.group,
            row.dtype.or(ours.function.as_deref().map(|_| "?")).unwrap_or("—"),
            ours.value.as_deref().unwrap_or("—"),
            ours.median * 1e6,
            speed(row, ours.median),
            row.kernel.map_or("—".to_owned(), |k| format!("`{}`", k.primitive)),
            mlx.map_or("—".to_owned(), |m| format!("{:.1}", m.median * 1e6)),
            mlx.map_or("—".to_owned(), |m| speed(row, m.median)),
            mlx.map_or("—".to_owned(), |m| format!("{:.2}", ours.median / m.median)),
            mlx.map_or("—".to_owned(), |m| format!("{:.2}", ours.fastest / m.fastest)),
        );
    }
    let kernels: Vec<String> = KERNELS
        .iter()
        .map(|k| format!("`{}` → `{}` ({}{})", k.group, k.primitive, k.shape, if k.flops { ", FLOPs" } else { "" }))
        .collect();
    template::render(
        "kernels",
        &[
            ("machine", format!("{}.", Machine::read().describe())),
            ("load", load.describe()),
            ("peak", format!("{peak:.1}")),
            ("blas", peaks.first().map_or("?".to_owned(), |p| p.blas.clone())),
            ("peak_shapes", peaks.iter().map(|p| format!("`{}`", p.shapes())).collect::<Vec<_>>().join("; ")),
            ("kernels", kernels.join("; ")),
            ("table", table.trim_end().to_owned()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::criterion::tests::write_benchmark;
    use crate::bench::gemm_peak::GemmShape;

    #[test]
    fn rows_read_criterion_ids_and_throughputs() {
        let home = std::env::temp_dir().join(format!("xtask-kernels-{}", std::process::id()));
        let _ = fs::remove_dir_all(&home);
        let flops = 2 * 2520 * 768 * 3072u64;
        write_benchmark(
            &home,
            ("gemm", Some("f32"), Some("2520x768x3072")),
            60.0e6,
            &format!(r#"{{"Elements":{flops}}}"#),
        );
        write_benchmark(&home, ("exp", Some("f32"), Some("1000000")), 500.0e3, r#"{"Elements":1000000}"#);
        write_benchmark(&home, ("other", None, None), 10.0, "null");
        let mut rows: Vec<Row> = criterion::read_all(&home)
            .unwrap()
            .into_iter()
            .map(|ours| Row {
                kernel: kernel(&ours.group),
                dtype: dtype(ours.function.as_deref()),
                dims: dims(ours.value.as_deref()),
                ours,
                mlx: None,
            })
            .collect();
        assert_eq!(
            rows.iter().map(spec).collect::<Vec<_>>(),
            [Some("exp:float32:1000000".to_owned()), Some("matmul:float32:2520x768x3072".to_owned()), None]
        );
        rows[1].mlx = Some(MlxTiming { median: 120.0e-3, fastest: 100.0e-3 });
        let peak = GemmPeak {
            blas: "OpenBLAS".to_owned(),
            gemm: vec![GemmShape { m: 1, k: 1, n: 1, gflops: 200.0 }],
            peak_gflops: 200.0,
        };
        let load = Load { before: "1".to_owned(), after: "2".to_owned() };
        let text = render(&rows, &[&peak], &load).unwrap();
        assert!(text.contains("| gemm | float32 | 2520x768x3072 | 60000.0 | 198.2 GFLOP/s | `matmul` | 120000.0 | 99.1 GFLOP/s | 0.50 | 0.54 | 99% |"), "{text}");
        assert!(
            text.contains("| exp | float32 | 1000000 | 500.0 | 0.500 ns/elem | `exp` | — | — | — | — | — |"),
            "{text}"
        );
        assert!(text.contains("| other | — | — | 0.0 | — | — |"), "{text}");
        fs::remove_dir_all(&home).unwrap();
    }
}
