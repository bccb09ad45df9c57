//! `cargo xtask bench kernels [BENCH…]`: each host kernel of the `kernels` crate, timed by its
//! criterion benches (`crates/kernels/benches/*.rs`), beside the MLX primitive it replaces
//! (timed on the stock wheels by `bench/python/mlx_primitives.py`, same shapes and dtypes) and
//! beside the machine's float32 GEMM peak ([`GemmPeak`], measured before and after).
//!
//! What the table reads from each criterion benchmark `<group>/<function>[/<value>]`:
//! - the kernel: the group's first segment (`gemm/e2b` → `gemm`); the rest names the model
//!   whose shapes it runs;
//! - the dtype: the function's first word (`bf16`/`bfloat16`, `f32`/`float32`, `f32+bf16w`);
//!   text after a `/` in the function is a variant (`scalar twin`, `in place`, …), timed
//!   without an MLX counterpart;
//! - the work: the declared throughput (`Throughput::Elements`), FLOPs for the kernels of
//!   [`FLOP_KERNELS`] (GFLOP/s and % of the GEMM peak), elements for the others (ns per
//!   element);
//! - the shape, for the MLX side ([`mlx_spec`]): the value (`MxKxN`), a `[a, b]` in the
//!   function, or the kernel's known width (the e2b shapes the benches use).
//!
//! Naming bench files runs only those and prints the table without writing it.

use crate::Setup;
use crate::criterion::{self, Estimate, Throughput};
use crate::gemm_peak::{self, GemmPeak};
use crate::machine::{Load, Machine};
use crate::{template, write_section};
use project::{Result, cargo, oracle_python, output, root, run, work_dir};
use serde_json::Value;
use std::fmt::Write as _;
use std::fs;

/// Kernels whose declared throughput counts FLOPs (2 per multiply-add).
pub const FLOP_KERNELS: &[&str] = &["gemm", "attention", "quantized"];

/// Attention benches' heads and head width by the model their group names.
const ATTENTION_SHAPES: &[(&str, u64, u64)] = &[("e2b", 12, 64), ("31b", 16, 72)];

/// The MLX primitive (or mlx-vlm op sequence) each kernel replaces, as `mlx_primitives.py`
/// names it, for the table's header.
const PRIMITIVES: &[(&str, &str)] = &[
    ("gemm", "`matmul` (x·Wᵀ; `addmm` with the unified embedder's bias)"),
    (
        "quantized",
        "`quantized_matmul` (x·Wᵀ, `transpose=True` as `nn.QuantizedLinear` runs it, on `W` quantized by \
         `mx.quantize` with the row's mode, bits and group; `dense` rows: `matmul` with the dense weights)",
    ),
    ("attention", "`fast.scaled_dot_product_attention` (scale 1, with and without the tower's mask)"),
    ("exp", "`exp`"),
    ("tanh", "`tanh`"),
    ("gelu_approx_mul", "`nn.gelu_approx(gate) * up`"),
    ("add", "`add`"),
    ("rms_norm", "`fast.rms_norm`"),
    ("vision_rms_norm", "mlx-vlm's `VisionRMSNorm` ops"),
    ("layer_norm", "`fast.layer_norm`"),
    ("rope", "mlx-vlm's `apply_multidimensional_rope` ops (2 partitions, tables given)"),
];

/// Which bench files to run.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Bench files of crates/kernels/benches to run (all by default; a subset prints its table
    /// without writing BENCHMARKS.md)
    benches: Vec<String>,
}

/// One benchmark, how it reads, and what the MLX side measured for it.
#[derive(Debug)]
struct Row {
    ours: Estimate,
    kernel: String,
    dtype: Option<&'static str>,
    variant: Option<String>,
    spec: Option<String>,
    mlx: Option<Timing>,
}

#[derive(Debug, Clone, Copy)]
struct Timing {
    median: f64,
    fastest: f64,
}

impl Row {
    fn new(ours: Estimate) -> Row {
        let kernel = ours.group.split('/').next().unwrap_or_default().to_owned();
        let function = ours.function.clone().unwrap_or_default();
        let (head, variant) = match function.split_once('/') {
            Some((head, variant)) => (head.to_owned(), Some(variant.to_owned())),
            None => (function, None),
        };
        let dtype = dtype(head.split_whitespace().next().unwrap_or_default());
        let mut row = Row { ours, kernel, dtype, variant, spec: None, mlx: None };
        row.spec = if row.variant.is_none() { mlx_spec(&row, &head) } else { None };
        row
    }

    fn counts_flops(&self) -> bool {
        FLOP_KERNELS.contains(&self.kernel.as_str())
    }

    /// Elements (or FLOPs) per iteration, as the bench declared.
    fn work(&self) -> Option<u64> {
        match self.ours.throughput {
            Some(Throughput::Elements(n)) => Some(n),
            _ => None,
        }
    }

    /// GFLOP/s or ns per element of `seconds` per iteration.
    fn speed(&self, seconds: f64) -> String {
        match self.work() {
            Some(flops) if self.counts_flops() => format!("{:.1} GFLOP/s", flops as f64 / seconds / 1e9),
            Some(elements) => format!("{:.3} ns/elem", seconds * 1e9 / elements as f64),
            None => "—".to_owned(),
        }
    }
}

/// The dtype a function id's first word names.
fn dtype(word: &str) -> Option<&'static str> {
    match word {
        "f32" | "float32" => Some("float32"),
        "bf16" | "bfloat16" => Some("bfloat16"),
        "f32+bf16w" => Some("float32+bf16w"),
        _ => None,
    }
}

/// Dimensions written `[a, b, …]` in `text`.
fn bracket_dims(text: &str) -> Option<Vec<u64>> {
    let inner = text.split_once('[')?.1.split_once(']')?.0;
    inner.split(',').map(|d| d.trim().parse().ok()).collect()
}

/// `MxKxN` → [M, K, N].
fn x_dims(text: &str) -> Option<Vec<u64>> {
    text.split('x').map(|d| d.parse().ok()).collect()
}

/// `op:dtype:d1xd2…` for `mlx_primitives.py`: the MLX counterpart of a row, when the kernel,
/// dtype and shape are known.
fn mlx_spec(row: &Row, function_head: &str) -> Option<String> {
    let dtype = row.dtype?;
    let elements = row.work();
    let family = row.ours.group.split_once('/').map(|(_, f)| f);
    let rows_of = |width: u64| elements.filter(|n| n % width == 0).map(|n| vec![n / width, width]);
    let (op, dims): (&str, Vec<u64>) = match row.kernel.as_str() {
        "gemm" => {
            let op = if family == Some("unified") { "addmm" } else { "matmul" };
            (op, x_dims(row.ours.value.as_deref()?)?)
        }
        "quantized" => {
            // `<dtype> <product>`: `affine<bits>g<group>`, `mxfp4`, … or `dense`.
            let product = function_head.split_whitespace().nth(1)?;
            let op = if product == "dense" { "matmul".to_owned() } else { format!("quantized_matmul_{product}") };
            let dims: Vec<String> = x_dims(row.ours.value.as_deref()?)?.iter().map(u64::to_string).collect();
            return Some(format!("{op}:{dtype}:{}", dims.join("x")));
        }
        "attention" => {
            let (_, heads, width) = ATTENTION_SHAPES.iter().find(|(f, _, _)| Some(*f) == family)?;
            let tokens = ((elements? / (4 * heads * width)) as f64).sqrt().round() as u64;
            let op = if row.ours.value.as_deref() == Some("mask") { "sdpa_mask" } else { "sdpa" };
            (op, vec![*heads, tokens, *width])
        }
        "exp" | "tanh" | "gelu_approx_mul" | "add" => (row.kernel.as_str(), vec![elements?]),
        "rms_norm" => ("rms_norm", bracket_dims(function_head).or_else(|| rows_of(768))?),
        "layer_norm" => ("layer_norm", bracket_dims(function_head).or_else(|| rows_of(768))?),
        "vision_rms_norm" => ("vision_rms_norm", bracket_dims(function_head).or_else(|| rows_of(64))?),
        "rope" => ("rope", elements.filter(|n| n % (12 * 64) == 0).map(|n| vec![n / (12 * 64), 12, 64])?),
        _ => return None,
    };
    let dims: Vec<String> = dims.iter().map(u64::to_string).collect();
    Some(format!("{op}:{dtype}:{}", dims.join("x")))
}

pub fn main(args: &Args, setup: Setup) -> Result<()> {
    let available = bench_files()?;
    if available.is_empty() {
        return Err("the kernels crate has no criterion benches (crates/kernels/benches/*.rs)".to_owned());
    }
    let selected: Vec<&String> =
        available.iter().filter(|f| args.benches.is_empty() || args.benches.contains(f)).collect();
    if selected.is_empty() || selected.len() < args.benches.len() {
        return Err(format!("no such bench; choose among {}", available.join(", ")));
    }
    setup()?;
    let dir = work_dir("bench/kernels")?;
    let home = dir.join("criterion");
    let _ = fs::remove_dir_all(&home);
    let load = Load::start();
    eprintln!("bench kernels: float32 GEMM peak (bench/python/gemm_peak.py)");
    let peak_before = GemmPeak::measure()?;
    for file in &selected {
        eprintln!("bench kernels: {file} (criterion)");
        run(cargo()
            .args(["bench", "--quiet", "-p", "gemma-vision-kernels", "--bench", file.as_str()])
            .env("CRITERION_HOME", &home))?;
    }
    let mut rows: Vec<Row> = criterion::read_all(&home)?.into_iter().map(Row::new).collect();
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

/// Times every row's MLX counterpart in one Python process (each distinct spec once).
fn time_mlx(rows: &mut [Row]) -> Result<()> {
    let mut specs: Vec<String> = rows.iter().filter_map(|r| r.spec.clone()).collect();
    specs.sort();
    specs.dedup();
    if specs.is_empty() {
        return Ok(());
    }
    let mut command = oracle_python(&root().join("bench/python/mlx_primitives.py"));
    command.args(&specs);
    for line in output(command)?.lines().filter(|l| l.starts_with('{')) {
        let json: Value = serde_json::from_str(line).map_err(|e| format!("mlx_primitives.py printed `{line}`: {e}"))?;
        let (Some(spec), Some(median), Some(fastest)) =
            (json["spec"].as_str(), json["median"].as_f64(), json["fastest"].as_f64())
        else {
            return Err(format!("mlx_primitives.py printed `{line}`"));
        };
        for row in rows.iter_mut().filter(|r| r.spec.as_deref() == Some(spec)) {
            row.mlx = Some(Timing { median, fastest });
        }
    }
    Ok(())
}

fn render(rows: &[Row], peaks: &[&GemmPeak], load: &Load) -> Result<String> {
    let peak = gemm_peak::best(peaks);
    let mut table = String::from(
        "| benchmark | dtype | ours (µs) | ours | MLX (µs) | MLX | ours / MLX | ours / MLX, fastest samples | % GEMM \
         peak |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let (ours, mlx) = (&row.ours, row.mlx);
        let percent = match row.work() {
            Some(flops) if row.counts_flops() && peak > 0.0 => {
                format!("{:.0}%", 100.0 * flops as f64 / ours.median / 1e9 / peak)
            }
            _ => "—".to_owned(),
        };
        let or_dash = |f: &dyn Fn(Timing) -> String| mlx.map_or("—".to_owned(), f);
        let _ = writeln!(
            table,
            "| {} | {} | {:.1} | {} | {} | {} | {} | {} | {percent} |",
            ours.id(),
            row.dtype.unwrap_or("—"),
            ours.median * 1e6,
            row.speed(ours.median),
            or_dash(&|m| format!("{:.1}", m.median * 1e6)),
            or_dash(&|m| row.speed(m.median)),
            or_dash(&|m| format!("{:.2}", ours.median / m.median)),
            or_dash(&|m| format!("{:.2}", ours.fastest / m.fastest)),
        );
    }
    let primitives: Vec<String> = PRIMITIVES.iter().map(|(k, p)| format!("`{k}` → {p}")).collect();
    template::render(
        "kernels",
        &[
            ("machine", format!("{}.", Machine::read().describe())),
            ("load", load.describe()),
            ("peak", format!("{peak:.1}")),
            ("blas", peaks.first().map_or("?".to_owned(), |p| p.blas.clone())),
            ("peak_shapes", peaks.iter().map(|p| format!("`{}`", p.shapes())).collect::<Vec<_>>().join("; ")),
            ("primitives", primitives.join("; ")),
            ("table", table.trim_end().to_owned()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::criterion::tests::write_benchmark;
    use crate::gemm_peak::GemmShape;

    fn elements(n: u64) -> String {
        format!(r#"{{"Elements":{n}}}"#)
    }

    #[test]
    fn the_benches_ids_map_to_mlx_specs_and_render() {
        let home = std::env::temp_dir().join(format!("xtask-kernels-{}", std::process::id()));
        let _ = fs::remove_dir_all(&home);
        let gemm = 2 * 2394 * 768 * 3072u64;
        write_benchmark(&home, ("gemm/e2b", Some("f32"), Some("2394x768x3072")), 60.0e6, &elements(gemm));
        write_benchmark(&home, ("gemm/unified", Some("f32+bf16w"), Some("280x6912x3840")), 1.0e6, &elements(1));
        write_benchmark(
            &home,
            ("attention/e2b", Some("bf16"), Some("mask")),
            1.0e6,
            &elements(4 * 12 * 2394 * 2394 * 64),
        );
        let q = 2 * 280 * 6912 * 3840u64;
        write_benchmark(
            &home,
            ("quantized/unified/patch_dense", Some("f32 affine4g64"), Some("280x6912x3840")),
            5.0e6,
            &elements(q),
        );
        write_benchmark(
            &home,
            ("quantized/e2b/projector", Some("bf16 mxfp4"), Some("266x768x1536")),
            1.0e6,
            &elements(1),
        );
        write_benchmark(
            &home,
            ("quantized/e2b/projector", Some("bf16 dense"), Some("266x768x1536")),
            1.0e6,
            &elements(1),
        );
        write_benchmark(&home, ("exp", Some("float32"), None), 500.0e3, &elements(1_000_000));
        write_benchmark(&home, ("exp", Some("float32/scalar twin"), None), 900.0e3, &elements(1_000_000));
        write_benchmark(&home, ("layer_norm", Some("float32 [280, 6912]"), None), 1.0e3, &elements(280 * 6912));
        write_benchmark(&home, ("rms_norm", Some("bfloat16"), None), 1.0e3, &elements(2394 * 768));
        write_benchmark(&home, ("vision_rms_norm", Some("float32"), None), 1.0e3, &elements(2394 * 12 * 64));
        write_benchmark(&home, ("other", None, None), 10.0, "null");
        let mut rows: Vec<Row> = criterion::read_all(&home).unwrap().into_iter().map(Row::new).collect();
        let specs: Vec<(String, Option<String>)> = rows.iter().map(|r| (r.ours.id(), r.spec.clone())).collect();
        let spec = |id: &str| specs.iter().find(|(i, _)| i == id).and_then(|(_, s)| s.clone());
        assert_eq!(spec("attention/e2b/bf16/mask").as_deref(), Some("sdpa_mask:bfloat16:12x2394x64"));
        assert_eq!(spec("gemm/e2b/f32/2394x768x3072").as_deref(), Some("matmul:float32:2394x768x3072"));
        assert_eq!(spec("gemm/unified/f32+bf16w/280x6912x3840").as_deref(), Some("addmm:float32+bf16w:280x6912x3840"));
        assert_eq!(spec("exp/float32").as_deref(), Some("exp:float32:1000000"));
        assert_eq!(spec("exp/float32/scalar twin"), None);
        assert_eq!(spec("layer_norm/float32 [280, 6912]").as_deref(), Some("layer_norm:float32:280x6912"));
        assert_eq!(spec("rms_norm/bfloat16").as_deref(), Some("rms_norm:bfloat16:2394x768"));
        assert_eq!(spec("vision_rms_norm/float32").as_deref(), Some("vision_rms_norm:float32:28728x64"));
        assert_eq!(spec("other"), None);
        assert_eq!(
            spec("quantized/unified/patch_dense/f32 affine4g64/280x6912x3840").as_deref(),
            Some("quantized_matmul_affine4g64:float32:280x6912x3840")
        );
        assert_eq!(
            spec("quantized/e2b/projector/bf16 mxfp4/266x768x1536").as_deref(),
            Some("quantized_matmul_mxfp4:bfloat16:266x768x1536")
        );
        assert_eq!(
            spec("quantized/e2b/projector/bf16 dense/266x768x1536").as_deref(),
            Some("matmul:bfloat16:266x768x1536")
        );

        for row in rows.iter_mut().filter(|r| r.ours.group == "gemm/e2b") {
            row.mlx = Some(Timing { median: 120.0e-3, fastest: 100.0e-3 });
        }
        let peak = GemmPeak {
            blas: "OpenBLAS".to_owned(),
            gemm: vec![GemmShape { m: 1, k: 1, n: 1, gflops: 200.0 }],
            peak_gflops: 200.0,
        };
        let load = Load { before: "1".to_owned(), after: "2".to_owned() };
        let text = render(&rows, &[&peak], &load).unwrap();
        let line = "| gemm/e2b/f32/2394x768x3072 | float32 | 60000.0 | 188.3 GFLOP/s | 120000.0 | 94.1 GFLOP/s | 0.50 | 0.54 | 94% |";
        assert!(text.contains(line), "{text}");
        assert!(
            text.contains("| exp/float32/scalar twin | float32 | 900.0 | 0.900 ns/elem | — | — | — | — | — |"),
            "{text}"
        );
        assert!(text.contains("| other | — | 0.0 | — | — |"), "{text}");
        assert!(
            text.contains(
                "| quantized/unified/patch_dense/f32 affine4g64/280x6912x3840 | float32 | 5000.0 | 2972.7 GFLOP/s |"
            ),
            "{text}"
        );
        fs::remove_dir_all(&home).unwrap();
    }
}
