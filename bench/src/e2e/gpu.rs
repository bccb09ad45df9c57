//! The e2e bench on a GPU, for `cargo xtask gpu-check`: ours (MLX's ops) against stock mlx-vlm,
//! both on the GPU of the stack's MLX, the checkpoint's bf16 and float32, on the e2b tower and
//! the unified embedder at `photo_640x480@280`. Its measurements are kept apart
//! (`<stack target>/bench/e2e-gpu/`) and BENCHMARKS.md, which holds the CPU's, is not written.

use super::run::{Runner, Tools};
use super::store::{Comparison, Measurement, Store};
use super::{CASES, Side, parse_models};
use project::stack::Stack;
use project::{Result, output};
use std::fs;

/// The models, case and sides the GPU bench runs.
const MODELS: [&str; 2] = ["e2b", "unified-12b"];
const CASE: &str = "photo_640x480@280";
const SIDES: [Side; 4] = [Side::OursF32, Side::MlxF32, Side::OursNative, Side::MlxBf16];
/// Timed encodes per side (after loading).
const RUNS: u32 = 5;

/// Runs the GPU bench on `stack`; returns its lines (one per model and dtype: both medians, the
/// ratio and how our features compare with mlx-vlm's) and whether every bf16 row is bit-exact.
pub fn run(stack: &Stack) -> Result<(Vec<String>, bool)> {
    let dir = stack.target_dir.join("bench/e2e-gpu");
    fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let tools = Tools::build(stack, &SIDES)?;
    eprintln!("gpu-check: bench checkpoints and images (bench_e2e.py make)");
    let models = parse_models(&output(tools.reference_python(&dir).arg("make"))?)?;
    let case = CASES.iter().find(|c| c.id == CASE).ok_or("the GPU bench's case is one of CASES")?;
    let mut store = Store::default();
    let mut runner = Runner::new(&dir, &tools, 1, RUNS, RUNS)?;
    let mut lines = Vec::new();
    let mut bf16_exact = true;
    for model in models.iter().filter(|m| MODELS.contains(&m.name.as_str())) {
        for side in SIDES {
            store.insert(runner.measure(model, case, side)?);
        }
        runner.compare_row(&mut store, model, case)?;
        for (ours, reference) in [(Side::OursNative, Side::MlxBf16), (Side::OursF32, Side::MlxF32)] {
            let (Some(o), Some(r)) =
                (store.find(&model.name, case.id, ours), store.find(&model.name, case.id, reference))
            else {
                continue;
            };
            let versus = if reference == Side::MlxBf16 { &o.versus_bf16 } else { &o.versus_f32 };
            if ours == Side::OursNative && versus != &Some(Comparison::Exact) {
                bf16_exact = false;
            }
            lines.push(line(&model.name, o, r, versus.as_ref()));
        }
    }
    store.save(&dir, case.table.store_file())?;
    Ok((lines, bf16_exact))
}

/// `<model> <case>: ours, native (bf16) 0.012 s vs mlx-vlm, bf16 0.015 s (0.80×), features exact`.
fn line(model: &str, ours: &Measurement, reference: &Measurement, versus: Option<&Comparison>) -> String {
    let features = match versus {
        Some(Comparison::Exact) => "features bit-exact".to_owned(),
        Some(Comparison::RelativeRmse(rmse)) => format!("features differ (relative RMSE {rmse:.2e})"),
        Some(Comparison::NotComparable(why)) => format!("features not comparable: {why}"),
        Some(Comparison::Reference) | None => "features not compared".to_owned(),
    };
    format!(
        "{model} {}: {} {:.4} s vs {} {:.4} s ({:.2}×), {features}",
        ours.case,
        ours.side.label(),
        ours.median,
        reference.side.label(),
        reference.median,
        ours.median / reference.median
    )
}
