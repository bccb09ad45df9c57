//! The masked softmax of a panel of `NR` queries, one query per lane, down the keys, in three
//! steps that each keep MLX's per-row order (`softmax.cpp`, simd width 1):
//!
//! 1. [`Lanes::scores`], on each tile of `q'·kᵀ` sums as the micro-kernel leaves it (keys
//!    in order): `s = T(acc)`, `s = T(s + mask)`, the running maximum `m` (MLX's `maximum`: a
//!    NaN is taken, else the larger, the earlier on ties);
//!    without a mask, [`Lanes::raw_maximum`] instead defers the rounding to step 2 (which
//!    then reads the raw sums), keeping only the maximum of the raw sums, whose rounding is
//!    step 1's maximum where every sum is finite;
//! 2. [`Lanes::exponentials`]: `e = exp(s − m)` and the sum of the `e` in key order;
//! 3. [`Lanes::normalize`], on each block of keys just before `p · v` reads it:
//!    `p = T(e · (1 / sum))` (bf16 recomputes `e` in MLX, which gives the same `e`).

use crate::cpu::Isa;
use crate::exp::exp;
#[cfg(doc)]
use crate::gemm::MicroKernel;
use crate::gemm::magnitudes::Magnitudes;
use crate::gemm::tile::NR;
use crate::{ElementType, Float};

/// Which code runs the lanes: the instruction set of the micro-kernel, AVX-512F (the 16 lanes
/// in one register), AVX2 + FMA (MLX's `exp` polynomial uses `fma`), NEON (four registers of
/// 4 lanes) or portable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lanes {
    isa: Isa,
}

/// Independent running maxima (and checks) in [`Lanes::raw_maximum`]'s vector paths.
const WAYS: usize = 4;

/// `x` rounded to `T` and widened back.
#[inline(always)]
fn round<T: Float>(x: f32) -> f32 {
    T::from_f32(x).to_f32()
}

/// MLX's `maximum(x, m)`: `x` if it is NaN or larger, else `m`.
#[inline(always)]
fn maximum(x: f32, m: f32) -> f32 {
    if x.is_nan() || x > m { x } else { m }
}

impl Lanes {
    /// The lanes of the instruction set `isa` (the micro-kernel's, [`MicroKernel::isa`]).
    pub(crate) fn new(isa: Isa) -> Lanes {
        Lanes { isa }
    }

    /// The instruction set the lanes run.
    pub(crate) fn isa(self) -> Isa {
        self.isa
    }

    /// Step 1 on `rows` (`k × NR`, the raw sums of `k` consecutive keys): each becomes
    /// `T(T(acc) + mask)` (or `T(acc)`), folded into the lanes' running `maximum`. `mask`
    /// holds the same `k × NR` values of `T`.
    #[inline]
    pub(crate) fn scores<T: Float>(self, rows: &mut [f32], mask: Option<&[f32]>, maximum: &mut [f32; NR]) {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512(avx512) => return avx512::scores::<T>(avx512, rows, mask, maximum),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(avx2) => return avx2::scores::<T>(avx2, rows, mask, maximum),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon(neon) => return neon::scores::<T>(neon, rows, mask, maximum),
            Isa::Portable => {}
        }
        for (j, row) in rows.chunks_exact_mut(NR).enumerate() {
            for (l, (s, m)) in row.iter_mut().zip(maximum.iter_mut()).enumerate() {
                let mut x = round::<T>(*s);
                if let Some(mask) = mask {
                    x = round::<T>(x + mask[j * NR + l]);
                }
                *s = x;
                *m = self::maximum(x, *m);
            }
        }
    }

    /// Step 1 unmasked, deferred: folds the raw sums `rows` (`k × NR`, left as they are) into
    /// the lanes' running `maximum` as `x > m ? x : m`, and adds each to `check`, both in any
    /// order (the vector paths interleave rows). Where every `check` lane ends finite no sum
    /// was NaN or infinite (a NaN or an infinity leaves every sum it joins NaN or infinite);
    /// then (`T` rounding monotonically) `T(maximum)` is step 1's maximum, up to the sign of a
    /// zero maximum (see the driver), and [`exponentials`](Self::exponentials) with `R = T` on
    /// the raw sums gives step 1 and 2's bits. A check that overflows on finite sums only sends
    /// the caller down the slower path, which gives the same bits.
    #[inline]
    pub(crate) fn raw_maximum(self, rows: &[f32], maximum: &mut [f32; NR], check: &mut [f32; NR]) {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512(avx512) => return avx512::raw_maximum(avx512, rows, maximum, check),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(avx2) => return avx2::raw_maximum(avx2, rows, maximum, check),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon(neon) => return neon::raw_maximum(neon, rows, maximum, check),
            Isa::Portable => {}
        }
        for row in rows.chunks_exact(NR) {
            for ((&x, m), c) in row.iter().zip(maximum.iter_mut()).zip(check.iter_mut()) {
                *m = if x > *m { x } else { *m };
                *c += x;
            }
        }
    }

    /// Step 2 over all keys of the panel (`Lk × NR`): `e = exp(R(s) − m)` in place (`R = f32`
    /// on scores step 1 finished; `R = T` on [`raw_maximum`](Self::raw_maximum)'s raw sums);
    /// returns the lanes' sums `Σ e` in key order.
    #[inline]
    pub(crate) fn exponentials<R: Float>(self, scores: &mut [f32], maximum: &[f32; NR]) -> [f32; NR] {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512(avx512) => return avx512::exponentials::<R>(avx512, scores, maximum),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(avx2) => return avx2::exponentials::<R>(avx2, scores, maximum),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon(neon) => return neon::exponentials::<R>(neon, scores, maximum),
            Isa::Portable => {}
        }
        let mut sum = [0.0f32; NR];
        for row in scores.chunks_exact_mut(NR) {
            for ((s, total), m) in row.iter_mut().zip(&mut sum).zip(maximum) {
                let e = exp(round::<R>(*s) - m);
                *total += e;
                *s = e;
            }
        }
        sum
    }

    /// Step 3 on a block of keys (`k × NR`): `p = T(e · inverse)` in place, `inverse` being
    /// `1 / sum` per lane. Returns bounds of the `p`'s [`Magnitudes`] (for `p · v`'s choice of
    /// FMA), for bf16 `T` (the only one where FMA can be exact; float32 gets
    /// [`Magnitudes::UNBOUNDED`]): every finite `p` is at most 1 (`e ≤ 1`, as `s ≤ max`;
    /// `sum ≥ 1`, as the maximum's `e` is 1), so only the smallest nonzero `p` is computed.
    #[inline]
    pub(crate) fn normalize<T: Float>(self, rows: &mut [f32], inverse: &[f32; NR]) -> Magnitudes {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512(avx512) => return avx512::normalize::<T>(avx512, rows, inverse),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(avx2) => return avx2::normalize::<T>(avx2, rows, inverse),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon(neon) => return neon::normalize::<T>(neon, rows, inverse),
            Isa::Portable => {}
        }
        for row in rows.chunks_exact_mut(NR) {
            for (s, inv) in row.iter_mut().zip(inverse) {
                *s = round::<T>(*s * inv);
            }
        }
        if T::DTYPE == ElementType::Bf16 { Magnitudes::of(rows, self.isa) } else { Magnitudes::UNBOUNDED }
    }
}

crate::simd::stamp! {
    lanes v (exp = crate::exp) for Avx2, Avx512, Neon;

    /// The `NR` lanes of `row`, in `NR / LANES` vectors.
    fn load(row: &[f32]) -> [v::V; NR / v::LANES] {
        let row = &row[..NR];
        std::array::from_fn(|q| v::load_at(row, q * v::LANES))
    }

    /// Stores `NR` lanes into `row`.
    fn store(row: &mut [f32], lanes: [v::V; NR / v::LANES]) {
        let row = &mut row[..NR];
        for (q, lanes) in lanes.into_iter().enumerate() {
            v::store_at(row, q * v::LANES, lanes);
        }
    }

    /// [`Lanes::scores`](super::Lanes::scores), the same bits as the portable loop.
    entry fn scores[T: Float](rows: &mut [f32], mask: Option<&[f32]>, maximum_lanes: &mut [f32; NR]) {
        let mut m = load(maximum_lanes);
        for (j, row) in rows.chunks_exact_mut(NR).enumerate() {
            let mut x = load(row);
            let add = mask.map(|mask| load(&mask[j * NR..]));
            for q in 0..NR / v::LANES {
                x[q] = v::round::<T>(x[q]);
                if let Some(add) = add {
                    x[q] = v::round::<T>(v::add(x[q], add[q]));
                }
                m[q] = v::maximum(x[q], m[q]);
            }
            store(row, x);
        }
        store(maximum_lanes, m);
    }

    /// [`Lanes::raw_maximum`](super::Lanes::raw_maximum): the rows go round [`WAYS`] pairs of
    /// running maximum and check, joined at the end, so that no row waits for the one before.
    entry fn raw_maximum(rows: &[f32], maximum_lanes: &mut [f32; NR], check_lanes: &mut [f32; NR]) {
        let mut m = [[v::splat(f32::NEG_INFINITY); NR / v::LANES]; WAYS];
        let mut c = [[v::splat(0.0); NR / v::LANES]; WAYS];
        (m[0], c[0]) = (load(maximum_lanes), load(check_lanes));
        for rows in rows.chunks(WAYS * NR) {
            for (w, row) in rows.chunks_exact(NR).enumerate() {
                let x = load(row);
                for q in 0..NR / v::LANES {
                    m[w][q] = v::select(v::gt(x[q], m[w][q]), x[q], m[w][q]);
                    c[w][q] = v::add(c[w][q], x[q]);
                }
            }
        }
        for w in 1..WAYS {
            for q in 0..NR / v::LANES {
                m[0][q] = v::select(v::gt(m[w][q], m[0][q]), m[w][q], m[0][q]);
                c[0][q] = v::add(c[0][q], c[w][q]);
            }
        }
        store(maximum_lanes, m[0]);
        store(check_lanes, c[0]);
    }

    /// [`Lanes::exponentials`](super::Lanes::exponentials), the same bits as the portable loop.
    entry fn exponentials[R: Float](scores: &mut [f32], maximum: &[f32; NR]) -> [f32; NR] {
        let m = load(maximum);
        // Where a vector's maxima are finite, no score of its lanes is NaN (a NaN would be the
        // maximum) and none exceeds them: every `s − m` is `≤ 0` or `−∞`.
        let bounded = m.map(|m| v::all(v::lt(v::abs(m), v::splat(f32::INFINITY))));
        let mut sum = [v::splat(0.0); NR / v::LANES];
        for row in scores.chunks_exact_mut(NR) {
            let mut e = load(row);
            for q in 0..NR / v::LANES {
                let x = v::sub(v::round::<R>(e[q]), m[q]);
                e[q] = if bounded[q] { exp::exp_nonpositive(x) } else { exp::exp(x) };
                sum[q] = v::add(sum[q], e[q]);
            }
            store(row, e);
        }
        let mut out = [0.0f32; NR];
        store(&mut out, sum);
        out
    }

    /// [`Lanes::normalize`](super::Lanes::normalize), the same bits as the portable loop.
    entry fn normalize[T: Float](rows: &mut [f32], inverse: &[f32; NR]) -> Magnitudes {
        let inv = load(inverse);
        let bounded = T::DTYPE == ElementType::Bf16;
        // The smallest nonzero finite `p`: every `p` is `+0`, positive or the canonical NaN
        // (`0x7FC0`), so `bits − 1` as unsigned puts the zeros last and the NaNs above `+∞`.
        let mut least = v::splat(f32::from_bits(u32::MAX));
        for row in rows.chunks_exact_mut(NR) {
            let mut p = load(row);
            for q in 0..NR / v::LANES {
                p[q] = v::round::<T>(v::mul(p[q], inv[q]));
                if bounded {
                    least = v::min_bits(least, v::add_bits(p[q], -1));
                }
            }
            store(row, p);
        }
        if !bounded {
            return Magnitudes::UNBOUNDED;
        }
        let least = v::to_array(least).into_iter().map(f32::to_bits).min().unwrap_or(u32::MAX).wrapping_add(1);
        let min = if least < f32::INFINITY.to_bits() { f32::from_bits(least) } else { f32::INFINITY };
        Magnitudes { max: 1.0, min }
    }
}
