//! The `e2e-high-budget` section of BENCHMARKS.md: `bench/templates/e2e-high-budget.md` filled
//! with the high-budget cases' rows ([`Table::HighBudget`]), where ours stand in for mlx-vlm as
//! the reference bits and llama.cpp's own soft-token count is shown beside each of its rows.

use super::render::{comparison, floor_ratio, gflops, machine, mib, models, optional, peak, row, runs};
use super::store::Store;
use super::{CASES, Side, Table};
use crate::template;
use project::Result;
use std::fmt::Write as _;

/// The filled template; models appear in `model_order`, then any other stored model.
pub fn section(store: &Store, model_order: &[String]) -> Result<String> {
    let models = models(store, model_order);
    template::render(
        Table::HighBudget.section(),
        &[("machine", machine(store)), ("runs", runs(store)), ("table", table(store, &models))],
    )
}

/// Every side's time, speed, memory and agreement, per model and case.
fn table(store: &Store, models: &[String]) -> String {
    let mut out = String::from(
        "| model | image | budget | patches | side | runs | median (s) | vs ours native | GFLOP/s | % peak | × floor | \
         load (s) | first (s) | peak RSS (MiB) | rel. RMSE, r = bf16 | rel. RMSE, r = f32 | llama.cpp's own tokens | \
         load avg | run |\n|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut rows = 0;
    for model in models {
        for case in CASES.iter().filter(|c| c.table == Table::HighBudget) {
            let measurements = row(store, model, case.id);
            let native = measurements.iter().find(|m| m.side == Side::OursNative);
            for m in &measurements {
                let speed = gflops(m);
                let _ = writeln!(
                    out,
                    "| {model} | {} | {} | {:.0} | {} | {} | {:.3} | {} | {} | {} | {} | {:.2} | {:.2} | {} | {} | {} | \
                     {} | {:.1} | {} |",
                    case.image,
                    case.budget,
                    m.soft_tokens * 9.0,
                    m.side.label(),
                    m.runs,
                    m.median,
                    optional(native.map(|n| m.median / n.median), |r| format!("{r:.2}")),
                    optional(speed, |g| format!("{g:.1}")),
                    optional(speed.zip(peak(store, m)).map(|(g, p)| 100.0 * g / p), |p| format!("{p:.0}%")),
                    optional(floor_ratio(store, m), |r| format!("{r:.2}")),
                    m.load_seconds,
                    m.load_seconds + m.first,
                    mib(m.peak_rss_bytes),
                    comparison(m.versus_bf16.as_ref()),
                    comparison(m.versus_f32.as_ref()),
                    optional(m.own_soft_tokens, |t| format!("{t:.0} (of {:.0})", m.soft_tokens)),
                    m.load_average,
                    m.run,
                );
                rows += 1;
            }
        }
    }
    if rows == 0 {
        return "Not measured in the stored runs.".to_owned();
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::super::store::Comparison;
    use super::super::store::tests::{measurement, run_info};
    use super::*;

    #[test]
    fn rows_show_the_ratio_to_ours_native_and_llama_cpps_own_tokens() {
        let mut store = Store::default();
        let case = "photo_4000x3000@1120";
        let mut native = measurement("e2b", case, Side::OursNative, 1, 40.0);
        native.soft_tokens = 1064.0;
        native.versus_bf16 = Some(Comparison::Reference);
        let mut llama = measurement("e2b", case, Side::LlamaF16, 1, 50.0);
        llama.soft_tokens = 1064.0;
        llama.own_soft_tokens = Some(1064.0);
        llama.versus_bf16 = Some(Comparison::RelativeRmse(6.4e-3));
        store.insert(native);
        store.insert(llama);
        store.insert(measurement("e2b", "photo_640x480@280", Side::OursNative, 1, 4.0));
        store.put_run(run_info(1));
        let text = section(&store, &["e2b".to_owned()]).unwrap();
        assert!(
            text.contains("| e2b | photo_4000x3000 | 1120 | 9576 | ours, native (bf16) | 3 | 40.000 | 1.00 |"),
            "{text}"
        );
        assert!(text.contains("| llama.cpp, f16 | 3 | 50.000 | 1.25 |"), "{text}");
        assert!(text.contains("| 6.40e-3 | — | 1064 (of 1064) | 1.5 | 1 |"), "{text}");
        assert!(!text.contains("photo_640x480"), "{text}");
        assert!(!text.contains("{{"));
    }

    /// × floor: the median over the run's floor, bf16 operands for the native row and float32
    /// ones for the float32 side; a run without a floor shows none.
    #[test]
    fn rows_show_their_time_over_the_exactness_floor() {
        use super::super::store::RunInfo;
        use crate::exact_floor::{ExactFloor, IsaRates};
        let case = "photo_4000x3000@1120";
        let rates =
            IsaRates { isa: "AVX2+FMA".to_owned(), fused_gflops: 1000.0, separate_gflops: 500.0, exp_per_ns: 1.0 };
        let floor = ExactFloor { kernels: "AVX2+FMA".to_owned(), threads: 2, isas: vec![rates] };
        let mut store = Store::default();
        // 1e12 flops and 1e9 exps (the test measurement's): 1 s + 1 s for bf16, 2 s + 1 s for f32.
        store.insert(measurement("e2b", case, Side::OursNative, 1, 3.0));
        store.insert(measurement("e2b", case, Side::OursF32, 1, 6.0));
        store.put_run(RunInfo { floor_before: Some(floor), ..run_info(1) });
        let text = section(&store, &["e2b".to_owned()]).unwrap();
        assert!(text.contains("| ours, native (bf16) | 3 | 3.000 | 1.00 | 333.3 | 278% | 1.50 |"), "{text}");
        assert!(text.contains("| ours, f32 | 3 | 6.000 | 2.00 | 166.7 | 139% | 2.00 |"), "{text}");
        assert!(text.contains("exactness floor's rates 2 threads; AVX2+FMA (the kernels'): FMA 1000.0"), "{text}");
        store.put_run(run_info(1));
        let text = section(&store, &["e2b".to_owned()]).unwrap();
        assert!(text.contains("| 3.000 | 1.00 | 333.3 | 278% | — |"), "{text}");
    }
}
