//! The e2e section of BENCHMARKS.md: `bench/templates/e2e.md` filled with the stored
//! measurements' tables, the runs that took them and the FLOP formulas.

use super::llama::{GGUF, LLAMA_CPP_PYTHON};
use super::store::{Comparison, Measurement, RunInfo, Store};
use super::{CASES, SIDES, Side, flops};
use crate::exact_floor::Operands;
use crate::template;
use project::Result;
use std::fmt::Write as _;

const MIB: f64 = 1024.0 * 1024.0;

/// A quantized checkpoint of the bench, beside the bf16 model it quantizes.
#[derive(Debug, Clone)]
pub struct Quantized {
    pub name: String,
    pub base: String,
    /// Which modules are quantized how.
    pub description: String,
}

impl Quantized {
    /// The quantized models among `models`.
    pub fn of(models: &[&super::Model]) -> Vec<Quantized> {
        models
            .iter()
            .filter_map(|m| {
                Some(Quantized { name: m.name.clone(), base: m.base.clone()?, description: m.quantization.clone()? })
            })
            .collect()
    }
}

/// The filled template; models appear in `model_order`, then any other stored model;
/// `quantized` lists the quantized models, each compared with its bf16 model.
pub fn section(store: &Store, model_order: &[String], quantized: &[Quantized]) -> Result<String> {
    let models = models(store, model_order);
    template::render(
        "e2e",
        &[
            ("machine", machine(store)),
            ("runs", runs(store)),
            ("flops_gemma4", flops::describe(false)),
            ("flops_unified", flops::describe(true)),
            ("exps_gemma4", flops::GEMMA4_EXPS.to_string()),
            ("llama_cpp_python", LLAMA_CPP_PYTHON.to_owned()),
            ("gguf", GGUF.to_owned()),
            ("table", table(store, &models)),
            ("throughput", throughput(store, &models)),
            ("quantized", quantized_table(store, quantized)),
        ],
    )
}

/// The models of `model_order`, then any other model `store` holds.
pub(super) fn models(store: &Store, model_order: &[String]) -> Vec<String> {
    let mut models: Vec<String> = model_order.to_vec();
    for m in &store.measurements {
        if !models.contains(&m.model) {
            models.push(m.model.clone());
        }
    }
    models
}

/// The machine of the latest run, and the MLX the runs reported.
pub(super) fn machine(store: &Store) -> String {
    let mlx = store.runs.iter().rev().map(|r| r.mlx.as_str()).find(|v| *v != "?").unwrap_or("?");
    store.runs.last().map_or("?".to_owned(), |r| format!("{}; MLX {mlx} (CPU backend)", r.machine))
}

/// One line per run: when, what, the load and the GEMM peak.
pub(super) fn runs(store: &Store) -> String {
    let mut out = String::new();
    for run in &store.runs {
        let after =
            run.gemm_after.as_ref().map_or("not measured (interrupted)".to_owned(), |g| format!("`{}`", g.shapes()));
        let floor = run.floor().map_or(String::new(), |f| format!("; exactness floor's rates {}", f.describe()));
        let _ = writeln!(
            out,
            "- Run {} ({}; {}): load average before {}, after {}; float32 GEMM peak {:.1} GFLOP/s ({}; before `{}`; \
             after {after}){floor}.",
            run.id,
            run.started,
            run.selection,
            run.load_before,
            run.load_after.as_deref().unwrap_or("?"),
            run.peak(),
            run.gemm_before.blas,
            run.gemm_before.shapes(),
        );
    }
    if out.is_empty() {
        out.push_str("- No runs.\n");
    }
    out.trim_end().to_owned()
}

/// The measurements of `model` and `case`, in table order.
pub(super) fn row<'a>(store: &'a Store, model: &str, case: &str) -> Vec<&'a Measurement> {
    SIDES.iter().filter_map(|&side| store.find(model, case, side)).collect()
}

pub(super) fn peak(store: &Store, m: &Measurement) -> Option<f64> {
    store.run(m.run).map(RunInfo::peak).filter(|p| *p > 0.0)
}

/// This row's median over the exactness floor of its run ([`crate::exact_floor`]): products of
/// bf16 operands where the reference multiplies bf16 values (its bf16 gemma4 tower), of float32
/// ones elsewhere (float32 sides, and the unified embedder, whose reference computes in float32).
pub(super) fn floor_ratio(store: &Store, m: &Measurement) -> Option<f64> {
    let floor = store.run(m.run)?.floor()?;
    let f32_side = m.side == Side::MlxF32 || m.side.reference() == Some(Side::MlxF32);
    let operands = if f32_side || m.model.starts_with("unified") { Operands::F32 } else { Operands::Bf16 };
    let seconds = floor.seconds(operands, m.flops?, m.exps.unwrap_or(0.0))?;
    Some(m.median / seconds)
}

pub(super) fn gflops(m: &Measurement) -> Option<f64> {
    m.flops.map(|f| f / m.median / 1e9)
}

pub(super) fn mib(bytes: Option<f64>) -> String {
    bytes.map_or("—".to_owned(), |b| format!("{:.0}", b / MIB))
}

pub(super) fn optional(value: Option<f64>, format: impl Fn(f64) -> String) -> String {
    value.map_or("—".to_owned(), format)
}

pub(super) fn comparison(c: Option<&Comparison>) -> String {
    match c {
        Some(Comparison::Reference) => "reference".to_owned(),
        Some(Comparison::Exact) => "exact".to_owned(),
        Some(Comparison::RelativeRmse(r)) => format!("{r:.2e}"),
        Some(Comparison::NotComparable(_)) => "not comparable".to_owned(),
        None => "—".to_owned(),
    }
}

/// The single-image cases: every side's time, speed, memory and agreement.
fn table(store: &Store, models: &[String]) -> String {
    let mut out = String::from(
        "| model | image | budget | patches | side | runs | median (s) | vs mlx-vlm | GFLOP/s | % peak | × floor | \
         load (s) | first (s) | peak RSS (MiB) | MLX peak (MiB) | rel. RMSE, r = bf16 | rel. RMSE, r = f32 | load avg | \
         run |\n|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for model in models {
        for case in CASES.iter().filter(|c| !c.is_throughput()) {
            let measurements = row(store, model, case.id);
            for m in &measurements {
                let unified = model.starts_with("unified");
                let patches =
                    if unified { format!("{} rows", case.budget) } else { format!("{:.0}", m.soft_tokens * 9.0) };
                let versus = m
                    .side
                    .reference()
                    .and_then(|r| measurements.iter().find(|o| o.side == r))
                    .map_or("—".to_owned(), |r| format!("{:.2}", m.median / r.median));
                let speed = gflops(m);
                let _ = writeln!(
                    out,
                    "| {model} | {} | {} | {patches} | {} | {} | {:.3} | {versus} | {} | {} | {} | {:.2} | {:.2} | {} | \
                     {} | {} | {} | {:.1} | {} |",
                    case.image,
                    case.budget,
                    m.side.label(),
                    m.runs,
                    m.median,
                    optional(speed, |g| format!("{g:.1}")),
                    optional(speed.zip(peak(store, m)).map(|(g, p)| 100.0 * g / p), |p| format!("{p:.0}%")),
                    optional(floor_ratio(store, m), |r| format!("{r:.2}")),
                    m.load_seconds,
                    m.load_seconds + m.first,
                    mib(m.peak_rss_bytes),
                    mib(m.mlx_peak_bytes),
                    comparison(m.versus_bf16.as_ref()),
                    comparison(m.versus_f32.as_ref()),
                    m.load_average,
                    m.run,
                );
            }
        }
    }
    out.trim_end().to_owned()
}

/// Each quantized model's single-image rows beside the same side's row of its bf16 model.
fn quantized_table(store: &Store, quantized: &[Quantized]) -> String {
    let mut out = String::from(
        "| model | quantized | image | budget | side | median (s) | bf16 model's median (s) | × bf16 model | \
         peak RSS (MiB) | bf16 model's peak RSS (MiB) | rel. RMSE, r = bf16 | run |\n\
         |---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut rows = 0;
    for q in quantized {
        for case in CASES.iter().filter(|c| !c.is_throughput()) {
            for m in row(store, &q.name, case.id) {
                let base = store.find(&q.base, case.id, m.side);
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {:.3} | {} | {} | {} | {} | {} | {} |",
                    q.name,
                    q.description,
                    case.image,
                    case.budget,
                    m.side.label(),
                    m.median,
                    optional(base.map(|b| b.median), |t| format!("{t:.3}")),
                    optional(base.map(|b| m.median / b.median), |r| format!("{r:.2}")),
                    mib(m.peak_rss_bytes),
                    mib(base.and_then(|b| b.peak_rss_bytes)),
                    comparison(m.versus_bf16.as_ref()),
                    m.run,
                );
                rows += 1;
            }
        }
    }
    if rows == 0 {
        return "Not measured in the stored runs (`--models unified-12b-legacy-q4,e2b-q4-projector,e2b-q4-tower`)."
            .to_owned();
    }
    out.trim_end().to_owned()
}

/// The throughput cases: several same-size images per call, in images per second.
fn throughput(store: &Store, models: &[String]) -> String {
    let mut out = String::from(
        "| model | images | budget | side | runs | median per call (s) | images/s | vs candle | GFLOP/s | % peak | \
         peak RSS (MiB) | load avg | run |\n|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut rows = 0;
    for model in models {
        for case in CASES.iter().filter(|c| c.is_throughput()) {
            let measurements = row(store, model, case.id);
            let candle = measurements.iter().find(|m| m.side == Side::Candle);
            for m in &measurements {
                let versus = match candle {
                    Some(c) if m.side != Side::Candle => format!("{:.2}", m.median / c.median),
                    _ => "—".to_owned(),
                };
                let speed = gflops(m);
                let _ = writeln!(
                    out,
                    "| {model} | {} × {} | {} | {} | {} | {:.3} | {:.2} | {versus} | {} | {} | {} | {:.1} | {} |",
                    m.images,
                    case.image,
                    case.budget,
                    m.side.label(),
                    m.runs,
                    m.median,
                    m.images as f64 / m.median,
                    optional(speed, |g| format!("{g:.1}")),
                    optional(speed.zip(peak(store, m)).map(|(g, p)| 100.0 * g / p), |p| format!("{p:.0}%")),
                    mib(m.peak_rss_bytes),
                    m.load_average,
                    m.run,
                );
                rows += 1;
            }
        }
    }
    if rows == 0 {
        return "Not measured in the stored runs (`--cases photo_640x480x8@280`).".to_owned();
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::super::store::tests::{measurement, run_info};
    use super::*;

    #[test]
    fn the_template_renders_rows_ratios_and_comparisons() {
        let mut store = Store::default();
        let mut ours = measurement("e2b", "photo_640x480@70", Side::OursF32, 1, 2.0);
        ours.versus_f32 = Some(Comparison::RelativeRmse(5.0e-7));
        let mut reference = measurement("e2b", "photo_640x480@70", Side::MlxF32, 1, 8.0);
        reference.versus_f32 = Some(Comparison::Reference);
        store.insert(ours);
        store.insert(reference);
        store.insert(measurement("e2b", "photo_640x480x8@280", Side::Candle, 1, 16.0));
        let mut batch = measurement("e2b", "photo_640x480x8@280", Side::OursF32, 1, 8.0);
        batch.images = 8;
        store.insert(batch);
        store.put_run(run_info(1));
        let mut quantized = measurement("e2b-q", "photo_640x480@70", Side::OursNative, 1, 3.0);
        quantized.versus_bf16 = Some(Comparison::Exact);
        store.insert(quantized);
        store.insert(measurement("e2b", "photo_640x480@70", Side::OursNative, 1, 2.0));
        let q = Quantized { name: "e2b-q".to_owned(), base: "e2b".to_owned(), description: "projector q".to_owned() };
        let text = section(&store, &["e2b".to_owned()], &[q]).unwrap();
        assert!(
            text.contains("| e2b-q | projector q | photo_640x480 | 70 | ours, native (bf16) | 3.000 | 2.000 | 1.50 |"),
            "{text}"
        );
        assert!(
            text.contains("| e2b | photo_640x480 | 70 | 2394 | ours, f32 | 3 | 2.000 | 0.25 | 500.0 | 417% |"),
            "{text}"
        );
        assert!(text.contains("| 5.00e-7 | 1.5 | 1 |"), "{text}");
        assert!(text.contains("| mlx-vlm, f32 | 3 | 8.000 | — |"), "{text}");
        assert!(text.contains("| e2b | 8 × photo_640x480 | 280 | ours, f32 | 3 | 8.000 | 1.00 | 0.50 |"), "{text}");
        assert!(text.contains("- Run 1 (2026-01-01 00:00 UTC; models all; sides all; cases all)"), "{text}");
        assert!(!text.contains("{{"));
    }
}
