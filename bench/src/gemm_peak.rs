//! The machine's measured float32 GEMM peak (`bench/python/gemm_peak.py`: NumPy's bundled
//! OpenBLAS on every core), the denominator of every "% peak" column.

use project::{Result, cmd, output, python, root};
use serde::{Deserialize, Serialize};

/// One measurement of the peak: each shape's best GFLOP/s and the largest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GemmPeak {
    pub blas: String,
    pub gemm: Vec<GemmShape>,
    pub peak_gflops: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GemmShape {
    pub m: u64,
    pub k: u64,
    pub n: u64,
    pub gflops: f64,
}

impl GemmPeak {
    /// Runs the measurement (a few seconds).
    pub fn measure() -> Result<GemmPeak> {
        let script = root().join("bench/python/gemm_peak.py");
        let text = output(cmd(python(), &[]).arg(&script))?;
        let line = text.lines().rev().find(|l| l.starts_with('{')).unwrap_or_default();
        serde_json::from_str(line).map_err(|e| format!("gemm_peak.py printed `{text}`: {e}"))
    }

    /// "M×K·K×N: G, …" for each shape timed.
    pub fn shapes(&self) -> String {
        let shapes: Vec<String> =
            self.gemm.iter().map(|s| format!("{}×{}·{}×{}: {:.1}", s.m, s.k, s.k, s.n, s.gflops)).collect();
        shapes.join(", ")
    }
}

/// The larger of two measurements' peaks (before and after a run).
pub fn best(peaks: &[&GemmPeak]) -> f64 {
    peaks.iter().map(|p| p.peak_gflops).fold(0.0, f64::max)
}
