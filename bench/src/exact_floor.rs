//! The exactness floor: the least time an encode can take on this machine while computing
//! MLX's bits, from the rates `bench_encode --floor` measures (the kernels crate's `peak`) on every
//! core, at the instruction set the kernels run:
//!
//! - every multiply-add of the matrix products at the fused multiply-add's rate where the
//!   reference's operands are bf16 (each product exact in float32, so one FMA has MLX's
//!   bits), at the multiply-then-add rate where they are float32 (the product must be rounded
//!   before the add: two instructions);
//! - plus every `exp` of the softmax at the rate of MLX's `exp` formula alone, in L1.
//!
//! Everything else an encode does (norms, RoPE, GELU, residual adds, packing, the stores) is
//! counted as zero: the floor is a bound no implementation of these bits can beat, not a
//! prediction.

use project::{Result, output};
use serde::{Deserialize, Serialize};
use std::process::Command;

/// The rates of one instruction set, on every core at once.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IsaRates {
    pub isa: String,
    /// 2 flops per fused multiply-add.
    pub fused_gflops: f64,
    /// 2 flops per multiply, then add.
    pub separate_gflops: f64,
    /// MLX's `exp` of float32 values, per nanosecond.
    pub exp_per_ns: f64,
}

/// One measurement: the kernels' instruction set, the threads, and the rates of each
/// instruction set this CPU can run (the kernels' first).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExactFloor {
    pub kernels: String,
    pub threads: u32,
    pub isas: Vec<IsaRates>,
}

/// Which arithmetic the reference's matrix products do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operands {
    /// bf16 values: products exact, FMA allowed.
    Bf16,
    /// float32 values: the product rounded, then added.
    F32,
}

impl ExactFloor {
    /// Runs `bench_encode` (a command of our bench program, as the stack runs it) with
    /// `--floor`: a few seconds on an idle machine.
    pub fn measure(mut bench_encode: Command) -> Result<ExactFloor> {
        let text = output(bench_encode.arg("--floor"))?;
        let line = text.lines().rev().find(|l| l.starts_with('{')).unwrap_or_default();
        serde_json::from_str(line).map_err(|e| format!("bench_encode --floor printed `{text}`: {e}"))
    }

    /// The rates of the instruction set the kernels run.
    pub fn kernels_rates(&self) -> Option<&IsaRates> {
        self.isas.iter().find(|r| r.isa == self.kernels).or(self.isas.first())
    }

    /// The floor's seconds for `flops` matrix-product flops (2 per multiply-add) on
    /// `operands`, and `exps` exponentials.
    pub fn seconds(&self, operands: Operands, flops: f64, exps: f64) -> Option<f64> {
        let rates = self.kernels_rates()?;
        let gflops = match operands {
            Operands::Bf16 => rates.fused_gflops,
            Operands::F32 => rates.separate_gflops,
        };
        (gflops > 0.0 && rates.exp_per_ns > 0.0).then(|| flops / (gflops * 1e9) + exps / (rates.exp_per_ns * 1e9))
    }

    /// The better of two measurements (before and after a run): each rate's maximum.
    pub fn best(first: &ExactFloor, second: Option<&ExactFloor>) -> ExactFloor {
        let mut best = first.clone();
        for rates in second.map(|s| s.isas.as_slice()).unwrap_or_default() {
            if let Some(mine) = best.isas.iter_mut().find(|r| r.isa == rates.isa) {
                mine.fused_gflops = mine.fused_gflops.max(rates.fused_gflops);
                mine.separate_gflops = mine.separate_gflops.max(rates.separate_gflops);
                mine.exp_per_ns = mine.exp_per_ns.max(rates.exp_per_ns);
            }
        }
        best
    }

    /// "AVX-512F (the kernels'): FMA 230.9, multiply-then-add 190.3 GFLOP/s, exp 10.54/ns; …".
    pub fn describe(&self) -> String {
        let isas: Vec<String> = self
            .isas
            .iter()
            .map(|r| {
                let mark = if r.isa == self.kernels { " (the kernels')" } else { "" };
                format!(
                    "{}{mark}: FMA {:.1}, multiply-then-add {:.1} GFLOP/s, exp {:.2}/ns",
                    r.isa, r.fused_gflops, r.separate_gflops, r.exp_per_ns
                )
            })
            .collect();
        format!("{} threads; {}", self.threads, isas.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor(fused: f64, separate: f64, exp: f64) -> ExactFloor {
        ExactFloor {
            kernels: "AVX-512F".to_owned(),
            threads: 2,
            isas: vec![
                IsaRates {
                    isa: "AVX-512F".to_owned(),
                    fused_gflops: fused,
                    separate_gflops: separate,
                    exp_per_ns: exp,
                },
                IsaRates { isa: "AVX2+FMA".to_owned(), fused_gflops: 1.0, separate_gflops: 1.0, exp_per_ns: 1.0 },
            ],
        }
    }

    #[test]
    fn the_floor_adds_the_products_at_their_rate_and_the_exps() {
        let f = floor(200.0, 100.0, 10.0);
        assert_eq!(f.seconds(Operands::Bf16, 400e9, 10e9), Some(2.0 + 1.0));
        assert_eq!(f.seconds(Operands::F32, 400e9, 0.0), Some(4.0));
        assert_eq!(floor(0.0, 1.0, 1.0).seconds(Operands::Bf16, 1.0, 1.0), None);
    }

    #[test]
    fn the_best_of_two_takes_each_rate_s_maximum() {
        let best = ExactFloor::best(&floor(200.0, 90.0, 10.0), Some(&floor(190.0, 100.0, 11.0)));
        let rates = best.kernels_rates().unwrap();
        assert_eq!((rates.fused_gflops, rates.separate_gflops, rates.exp_per_ns), (200.0, 100.0, 11.0));
        assert!(best.describe().starts_with("2 threads; AVX-512F (the kernels'): FMA 200.0"));
    }

    #[test]
    fn the_probe_s_line_parses() {
        let line = r#"{"kernels": "AVX2+FMA", "threads": 2, "isas": [{"isa": "AVX2+FMA", "fused_gflops": 228.98, "separate_gflops": 186.30, "exp_per_ns": 7.6072}]}"#;
        let f: ExactFloor = serde_json::from_str(line).unwrap();
        assert_eq!(f.kernels_rates().unwrap().fused_gflops, 228.98);
    }
}
