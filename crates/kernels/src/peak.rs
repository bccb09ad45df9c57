//! The exactness floor's rates: how fast this CPU issues the arithmetic that MLX's bits leave
//! the kernels, measured by loops that do nothing else, on every core at once.
//!
//! - [`Probe::FusedMultiplyAdd`]: `acc = a·b + acc` rounded once (`v::mul_add`). A matrix
//!   product of bf16 operands may run at this rate: every product of two bf16 values is exact
//!   in float32, so one FMA gives MLX's separate multiply-then-add bits.
//! - [`Probe::MultiplyThenAdd`]: the product rounded, then the sum (`v::mul`, `v::add`): the
//!   float32 k-step of the x86-64 wheel. It costs two instructions per multiply-add; whether
//!   it is slower than the FMA depends on the core (a core that issues multiplies and adds on
//!   separate pipes runs both at the same rate).
//! - [`Probe::Exp`]: MLX's `exp` of non-positive arguments (the softmax's `exp(s − max)`), the
//!   lanes function [`exp`](crate::exp) computes, over a block that stays in L1.
//!
//! Each thread runs independent chains (enough of them to cover the latency of one step, few
//! enough to stay in the registers of every instruction set), so the loop is bound by issue,
//! not latency. The rates are per second of wall time over all threads: run them on an
//! otherwise idle machine.

use crate::cpu::Isa;
use std::time::{Duration, Instant};

/// Independent chains per thread on x86-64 and in the portable loops: more than the latency of
/// one step times the pipes that issue it (4 cycles × 2 FMA pipes for the FMA; a multiply, then
/// an add, for the other), and few enough that they and the two constants fit in 16 registers.
/// LLVM holds these loops in the first 16 vector registers even on AVX-512, so more chains
/// spill to the stack and the loop measures store forwarding instead of the arithmetic.
const CHAINS: usize = 14;
/// Independent chains per thread on NEON, whose cores issue up to 4 FMAs a cycle (32 registers).
const WIDE_CHAINS: usize = 24;

/// What one thread's run of a probe gives back.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Run {
    /// A value that depends on every step: the largest chain's (all chains hold the same
    /// value), or the exp block's sum.
    value: f32,
    /// Operations per round: multiply-adds (chains × lanes), or `exp`s.
    per_round: usize,
}

/// Elements of the `exp` probe's block (4 KiB: in L1 on every core).
const EXP_BLOCK: usize = 1024;

/// What a probe issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// `a·b + acc` rounded once.
    FusedMultiplyAdd,
    /// `round(a·b)`, then `+ acc`.
    MultiplyThenAdd,
    /// MLX's `exp` of non-positive float32 values.
    Exp,
}

impl Probe {
    /// Every probe.
    pub const ALL: [Probe; 3] = [Probe::FusedMultiplyAdd, Probe::MultiplyThenAdd, Probe::Exp];

    /// The probe's name as benchmarks print it.
    pub fn name(self) -> &'static str {
        match self {
            Probe::FusedMultiplyAdd => "fused multiply-add",
            Probe::MultiplyThenAdd => "multiply, then add",
            Probe::Exp => "exp",
        }
    }
}

/// Operations per second (multiply-adds for the first two probes, `exp`s for the last) of
/// `probe` at instruction set `isa` on `threads` threads at once, each running for about
/// `duration`: the best of `repeats` runs.
pub fn rate(probe: Probe, isa: Isa, threads: usize, duration: Duration, repeats: usize) -> f64 {
    let threads = threads.max(1);
    let per_round = run(probe, isa, 1).per_round as f64;
    // Rounds per thread, calibrated so that one run lasts `duration`.
    let mut rounds = 1u64 << 10;
    let mut best = 0.0f64;
    loop {
        let seconds = timed(probe, isa, 1, rounds);
        if seconds >= duration.as_secs_f64() / 8.0 || rounds >= 1 << 40 {
            let scale = duration.as_secs_f64() / seconds.max(1e-9);
            rounds = ((rounds as f64 * scale) as u64).max(1);
            break;
        }
        rounds *= 4;
    }
    for _ in 0..repeats.max(1) {
        let seconds = timed(probe, isa, threads, rounds);
        best = best.max(per_round * rounds as f64 * threads as f64 / seconds.max(1e-9));
    }
    best
}

/// Seconds of wall time for `threads` threads each running `rounds` rounds of `probe`.
fn timed(probe: Probe, isa: Isa, threads: usize, rounds: u64) -> f64 {
    let start = Instant::now();
    let sink: f32 = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads).map(|_| scope.spawn(move || run(probe, isa, rounds))).collect();
        handles.into_iter().map(|h| h.join().map_or(0.0, |run| run.value)).sum()
    });
    std::hint::black_box(sink);
    start.elapsed().as_secs_f64()
}

/// One thread's run of `rounds` rounds of `probe` at `isa`.
fn run(probe: Probe, isa: Isa, rounds: u64) -> Run {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx512) = isa.avx512() {
        let (value, per_round) = avx512::probe(avx512, probe, rounds);
        return Run { value, per_round };
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = isa.avx2() {
        let (value, per_round) = avx2::probe(avx2, probe, rounds);
        return Run { value, per_round };
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(neon) = isa.neon() {
        let (value, per_round) = neon::probe(neon, probe, rounds);
        return Run { value, per_round };
    }
    let _ = isa;
    portable(probe, rounds)
}

/// The probes one float32 at a time (what the portable kernels have): `CHAINS` chains.
fn portable(probe: Probe, rounds: u64) -> Run {
    let (b, c) = (std::hint::black_box(0.75f32), std::hint::black_box(0.25f32));
    let chains = |step: fn(f32, f32, f32) -> f32| {
        let mut acc = [std::hint::black_box(0.5f32); CHAINS];
        for _ in 0..rounds {
            for a in &mut acc {
                *a = step(*a, b, c);
            }
        }
        Run { value: acc.into_iter().fold(f32::NEG_INFINITY, f32::max), per_round: CHAINS }
    };
    match probe {
        Probe::FusedMultiplyAdd => chains(f32::mul_add),
        Probe::MultiplyThenAdd => chains(|a, b, c| a * b + c),
        Probe::Exp => {
            let mut block = [std::hint::black_box(-0.5f32); EXP_BLOCK];
            for _ in 0..rounds {
                for x in &mut block {
                    *x = -crate::exp::exp(*x);
                }
            }
            Run { value: block.iter().sum(), per_round: EXP_BLOCK }
        }
    }
}

crate::simd::stamp! {
    lanes v (exp = crate::exp) for Avx2, Avx512, Neon;

    /// `probe`'s loop, `rounds` rounds: a value that depends on every step, and the
    /// operations of one round.
    entry fn probe(probe: Probe, rounds: u64) -> (f32, usize) {
        let (b, c) = (v::splat(std::hint::black_box(0.75f32)), v::splat(std::hint::black_box(0.25f32)));
        match probe {
            Probe::FusedMultiplyAdd => chains(rounds, |a| v::mul_add(a, b, c)),
            Probe::MultiplyThenAdd => chains(rounds, |a| v::add(v::mul(a, b), c)),
            Probe::Exp => (exps(rounds), EXP_BLOCK),
        }
    }

    /// Independent chains of `acc = step(acc)` from ½, `rounds` times (the probes' steps
    /// `acc·¾ + ¼` keep the values in `[0.5, 1]`: no subnormals, no infinities):
    /// `WIDE_CHAINS` on NEON (the one instruction set with 4 lanes), `CHAINS` on x86-64. The
    /// largest chain's first lane (every chain is used, and all hold the same value), and the
    /// multiply-adds of a round.
    fn chains[F: Fn(v::V) -> v::V](rounds: u64, step: F) -> (f32, usize) {
        const N: usize = if v::LANES == 4 { WIDE_CHAINS } else { CHAINS };
        let mut acc = [v::splat(std::hint::black_box(0.5f32)); N];
        for _ in 0..rounds {
            for a in &mut acc {
                *a = step(*a);
            }
        }
        (acc.iter().map(|&a| v::to_array(a)[0]).fold(f32::NEG_INFINITY, f32::max), N * v::LANES)
    }

    /// `x = −exp(x)` over a block of `EXP_BLOCK` values, `rounds` times (the values stay in
    /// `[−1, 0]`, the softmax's range, where `exp` takes its polynomial path).
    fn exps(rounds: u64) -> f32 {
        let mut block = [std::hint::black_box(-0.5f32); EXP_BLOCK];
        let (chunks, _) = block.as_chunks_mut::<{ v::LANES }>();
        for _ in 0..rounds {
            for chunk in chunks.iter_mut() {
                *chunk = v::to_array(v::neg(exp::exp_nonpositive(v::from_array(chunk))));
            }
        }
        block.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every probe runs at every instruction set this CPU has and measures a positive rate;
    /// each vector probe computes what its portable twin computes.
    #[test]
    fn probes_run_and_agree_with_the_portable_loops() {
        let mut isas = vec![Isa::Portable, crate::cpu::isa()];
        isas.push(crate::cpu::isa().at_most_avx2());
        for isa in isas {
            for probe in Probe::ALL {
                // Every chain computes the same value; the exp blocks hold the same values.
                let (got, want) = (run(probe, isa, 3), portable(probe, 3));
                assert_eq!(got.value, want.value, "{} at {isa}", probe.name());
                assert_eq!(got.per_round % want.per_round, 0, "{} at {isa}", probe.name());
                assert!(rate(probe, isa, 2, Duration::from_millis(5), 1) > 0.0);
            }
        }
    }
}
