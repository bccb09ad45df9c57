//! The e2e measurements kept between runs (`target/bench/e2e/measurements.json`, and
//! `measurements-high-budget.json` for the high-budget table): one per (model, case, side), the
//! latest replacing earlier ones, and the runs that took them (when, what was selected, the
//! machine's load and GEMM peak).

use super::Side;
use crate::exact_floor::ExactFloor;
use crate::gemm_peak::GemmPeak;
use project::Result;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Store {
    pub runs: Vec<RunInfo>,
    pub measurements: Vec<Measurement>,
}

/// One invocation of `cargo xtask bench e2e`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub id: u32,
    pub started: String,
    pub machine: String,
    pub mlx: String,
    pub selection: String,
    pub load_before: String,
    /// Absent while the run is under way (or when it was interrupted).
    pub load_after: Option<String>,
    pub gemm_before: GemmPeak,
    pub gemm_after: Option<GemmPeak>,
    /// The exactness floor's rates before and after the rows (absent in runs that predate it).
    #[serde(default)]
    pub floor_before: Option<ExactFloor>,
    #[serde(default)]
    pub floor_after: Option<ExactFloor>,
}

impl RunInfo {
    /// The best GEMM peak this run measured (before and after its rows).
    pub fn peak(&self) -> f64 {
        let after = self.gemm_after.as_ref().map_or(0.0, |g| g.peak_gflops);
        self.gemm_before.peak_gflops.max(after)
    }

    /// The best of this run's floor measurements (before and after its rows).
    pub fn floor(&self) -> Option<ExactFloor> {
        let before = self.floor_before.as_ref().or(self.floor_after.as_ref())?;
        Some(ExactFloor::best(before, self.floor_after.as_ref()))
    }
}

/// One side's measurement of one (model, case).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measurement {
    pub run: u32,
    pub model: String,
    pub case: String,
    pub side: Side,
    /// Timed encodes.
    pub runs: usize,
    /// Median seconds per call (all of the case's images).
    pub median: f64,
    pub load_seconds: f64,
    /// Seconds of the first timed call.
    pub first: f64,
    pub peak_rss_bytes: Option<f64>,
    pub mlx_peak_bytes: Option<f64>,
    /// Soft tokens of all the case's images.
    pub soft_tokens: f64,
    /// llama.cpp's sides: the soft tokens its own preprocessing makes of the case's image files
    /// under `image_max_tokens` = the budget (the encode itself runs on the reference's pixels).
    #[serde(default)]
    pub own_soft_tokens: Option<f64>,
    pub images: usize,
    /// Matmul FLOPs of one call ([`super::flops`]).
    pub flops: Option<f64>,
    /// The softmax's exponentials of one call ([`super::flops::exps`]).
    #[serde(default)]
    pub exps: Option<f64>,
    /// The 1-minute load average when the side started.
    pub load_average: f64,
    pub features: PathBuf,
    /// Against mlx-vlm bf16's features of the same row, and against mlx-vlm f32's.
    pub versus_bf16: Option<Comparison>,
    pub versus_f32: Option<Comparison>,
}

/// How a side's features compare with a reference side's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Comparison {
    /// This side is the reference.
    Reference,
    /// Identical bits.
    Exact,
    /// ‖x − r‖₂ / ‖r‖₂.
    RelativeRmse(f64),
    /// Why the two cannot be compared (e.g. different shapes).
    NotComparable(String),
}

impl Store {
    /// The store kept in `dir/file`, or an empty one.
    pub fn load(dir: &Path, file: &str) -> Result<Store> {
        let path = dir.join(file);
        match fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| format!("{}: {e} (run with --fresh to start over)", path.display())),
            Err(_) => Ok(Store::default()),
        }
    }

    pub fn save(&self, dir: &Path, file: &str) -> Result<()> {
        let path = dir.join(file);
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    }

    pub fn next_run_id(&self) -> u32 {
        self.runs.iter().map(|r| r.id).max().unwrap_or(0) + 1
    }

    /// Records a run (again, to update it) and forgets other runs no measurement refers to.
    pub fn put_run(&mut self, run: RunInfo) {
        let id = run.id;
        self.runs.retain(|r| r.id != id);
        self.runs.push(run);
        let measurements = &self.measurements;
        self.runs.retain(|r| r.id == id || measurements.iter().any(|m| m.run == r.id));
        self.runs.sort_by_key(|r| r.id);
    }

    /// Adds a measurement, replacing the earlier one of the same model, case and side.
    pub fn insert(&mut self, measurement: Measurement) {
        self.measurements
            .retain(|m| !(m.model == measurement.model && m.case == measurement.case && m.side == measurement.side));
        self.measurements.push(measurement);
    }

    pub fn find(&self, model: &str, case: &str, side: Side) -> Option<&Measurement> {
        self.measurements.iter().find(|m| m.model == model && m.case == case && m.side == side)
    }

    pub fn run(&self, id: u32) -> Option<&RunInfo> {
        self.runs.iter().find(|r| r.id == id)
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::gemm_peak::GemmShape;

    pub fn measurement(model: &str, case: &str, side: Side, run: u32, median: f64) -> Measurement {
        Measurement {
            run,
            model: model.to_owned(),
            case: case.to_owned(),
            side,
            runs: 3,
            median,
            load_seconds: 0.5,
            first: median * 1.1,
            peak_rss_bytes: Some(1024.0 * 1024.0 * 700.0),
            mlx_peak_bytes: None,
            soft_tokens: 266.0,
            own_soft_tokens: None,
            images: 1,
            flops: Some(1.0e12),
            exps: Some(1.0e9),
            load_average: 1.5,
            features: PathBuf::from(format!("{model}-{case}-{}.safetensors", side.id())),
            versus_bf16: None,
            versus_f32: None,
        }
    }

    pub fn run_info(id: u32) -> RunInfo {
        let peak = GemmPeak {
            blas: "OpenBLAS".to_owned(),
            gemm: vec![GemmShape { m: 8, k: 8, n: 8, gflops: 100.0 }],
            peak_gflops: 100.0,
        };
        RunInfo {
            id,
            started: "2026-01-01 00:00 UTC".to_owned(),
            machine: "CPU (avx2, fma), 2 cores; OS".to_owned(),
            mlx: "0.32.2".to_owned(),
            selection: "models all; sides all; cases all".to_owned(),
            load_before: "1.00, 1.00, 1.00".to_owned(),
            load_after: Some("1.10, 1.00, 1.00".to_owned()),
            gemm_before: peak.clone(),
            gemm_after: Some(GemmPeak { peak_gflops: 120.0, ..peak }),
            floor_before: None,
            floor_after: None,
        }
    }

    #[test]
    fn later_measurements_replace_earlier_ones_and_unused_runs_go() {
        let mut store = Store::default();
        store.insert(measurement("e2b", "photo_640x480@70", Side::OursF32, 1, 2.0));
        store.put_run(run_info(1));
        assert_eq!(store.next_run_id(), 2);
        store.insert(measurement("e2b", "photo_640x480@70", Side::OursF32, 2, 1.0));
        store.insert(measurement("e2b", "photo_640x480@70", Side::Candle, 2, 3.0));
        store.put_run(run_info(2));
        assert_eq!(store.measurements.len(), 2);
        assert_eq!(store.find("e2b", "photo_640x480@70", Side::OursF32).map(|m| m.median), Some(1.0));
        assert_eq!(store.runs.iter().map(|r| r.id).collect::<Vec<_>>(), [2]);
        assert_eq!(store.run(2).map(RunInfo::peak), Some(120.0));
        let json = serde_json::to_string(&store).unwrap();
        let back: Store = serde_json::from_str(&json).unwrap();
        assert_eq!(back.measurements.len(), 2);
    }
}
