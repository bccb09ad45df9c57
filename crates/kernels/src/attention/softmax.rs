//! The masked softmax of a panel of `NR` queries, one query per lane, down the keys, in three
//! steps that each keep MLX's per-row order (`softmax.cpp`, simd width 1):
//!
//! 1. [`Lanes::scores`], on each tile of `q'·kᵀ` sums as the micro-kernel leaves it (keys
//!    in order): `s = T(acc)`, `s = T(s + mask)`, the running maximum `m` (MLX's `maximum`: a
//!    NaN is taken, else the larger, the earlier on ties);
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

    /// Step 2 over all keys of the panel (`Lk × NR`): `e = exp(s − m)` in place; returns the
    /// lanes' sums `Σ e` in key order.
    #[inline]
    pub(crate) fn exponentials(self, scores: &mut [f32], maximum: &[f32; NR]) -> [f32; NR] {
        match self.isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512(avx512) => return avx512::exponentials(avx512, scores, maximum),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(avx2) => return avx2::exponentials(avx2, scores, maximum),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon(neon) => return neon::exponentials(neon, scores, maximum),
            Isa::Portable => {}
        }
        let mut sum = [0.0f32; NR];
        for row in scores.chunks_exact_mut(NR) {
            for ((s, total), m) in row.iter_mut().zip(&mut sum).zip(maximum) {
                let e = exp(*s - m);
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

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The steps on two vectors of 8 lanes per key, the same bits as the portable loops.

    use super::NR;
    use crate::ElementType;
    use crate::Float;
    use crate::exp::avx2::{exp8, exp8_nonpositive};
    use crate::gemm::magnitudes::Magnitudes;
    use crate::lanes::round8;
    use std::arch::x86_64::*;

    const _: () = assert!(NR == 16);

    /// MLX's `maximum(x, m)` per lane.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn maximum(x: __m256, m: __m256) -> __m256 {
        let take = _mm256_or_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(x, m), _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
        _mm256_blendv_ps(m, x, take)
    }

    /// Loads the 16 lanes of `row`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn load(row: &[f32]) -> [__m256; 2] {
        let row = &row[..NR];
        // SAFETY: `row` holds 16 floats.
        unsafe { [_mm256_loadu_ps(row.as_ptr()), _mm256_loadu_ps(row.as_ptr().add(8))] }
    }

    /// Stores 16 lanes into `row`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn store(row: &mut [f32], lanes: [__m256; 2]) {
        let row = &mut row[..NR];
        // SAFETY: `row` holds 16 floats.
        unsafe {
            _mm256_storeu_ps(row.as_mut_ptr(), lanes[0]);
            _mm256_storeu_ps(row.as_mut_ptr().add(8), lanes[1]);
        }
    }

    crate::cpu::target_entry! {
        Avx2;
        /// [`scores_tf`] behind the token that proves its target features.
        pub(super) fn scores[T: Float](
            rows: &mut [f32],
            mask: Option<&[f32]>,
            maximum_lanes: &mut [f32; NR],
        ) = scores_tf;
    }

    #[target_feature(enable = "avx2,fma")]
    fn scores_tf<T: Float>(rows: &mut [f32], mask: Option<&[f32]>, maximum_lanes: &mut [f32; NR]) {
        let mut m = load(maximum_lanes);
        for (j, row) in rows.chunks_exact_mut(NR).enumerate() {
            let s = load(row);
            let mut x = [round8::<T>(s[0]), round8::<T>(s[1])];
            if let Some(mask) = mask {
                let add = load(&mask[j * NR..]);
                x = [round8::<T>(_mm256_add_ps(x[0], add[0])), round8::<T>(_mm256_add_ps(x[1], add[1]))];
            }
            store(row, x);
            m = [maximum(x[0], m[0]), maximum(x[1], m[1])];
        }
        store(maximum_lanes, m);
    }

    /// Whether all 8 lanes are finite.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn finite(x: __m256) -> bool {
        let magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0), x);
        _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(magnitude, _mm256_set1_ps(f32::INFINITY))) == 0xFF
    }

    crate::cpu::target_entry! {
        Avx2;
        /// [`exponentials_tf`] behind the token that proves its target features.
        pub(super) fn exponentials(scores: &mut [f32], maximum: &[f32; NR]) -> [f32; NR] = exponentials_tf;
    }

    #[target_feature(enable = "avx2,fma")]
    fn exponentials_tf(scores: &mut [f32], maximum: &[f32; NR]) -> [f32; NR] {
        let m = load(maximum);
        // Where a lane's maximum is finite, no score of it is NaN (a NaN would be the maximum)
        // and none exceeds it: every `s − m` is `≤ 0` or `−∞`.
        let bounded = [finite(m[0]), finite(m[1])];
        let exp = |x: __m256, bounded: bool| if bounded { exp8_nonpositive(x) } else { exp8(x) };
        let mut sum = [_mm256_setzero_ps(); 2];
        for row in scores.chunks_exact_mut(NR) {
            let s = load(row);
            let e = [exp(_mm256_sub_ps(s[0], m[0]), bounded[0]), exp(_mm256_sub_ps(s[1], m[1]), bounded[1])];
            sum = [_mm256_add_ps(sum[0], e[0]), _mm256_add_ps(sum[1], e[1])];
            store(row, e);
        }
        let mut out = [0.0f32; NR];
        store(&mut out, sum);
        out
    }

    crate::cpu::target_entry! {
        Avx2;
        /// [`normalize_tf`] behind the token that proves its target features.
        pub(super) fn normalize[T: Float](rows: &mut [f32], inverse: &[f32; NR]) -> Magnitudes = normalize_tf;
    }

    #[target_feature(enable = "avx2,fma")]
    fn normalize_tf<T: Float>(rows: &mut [f32], inverse: &[f32; NR]) -> Magnitudes {
        let inv = load(inverse);
        let bounded = T::DTYPE == ElementType::Bf16;
        // The smallest nonzero finite `p`: every `p` is `+0`, positive or the canonical NaN
        // (`0x7FC0`), so `bits − 1` as unsigned puts the zeros last and the NaNs above `+∞`.
        let one = _mm256_set1_epi32(1);
        let mut least = _mm256_set1_epi32(-1);
        for row in rows.chunks_exact_mut(NR) {
            let e = load(row);
            let p = [round8::<T>(_mm256_mul_ps(e[0], inv[0])), round8::<T>(_mm256_mul_ps(e[1], inv[1]))];
            if bounded {
                for half in p {
                    least = _mm256_min_epu32(least, _mm256_sub_epi32(_mm256_castps_si256(half), one));
                }
            }
            store(row, p);
        }
        if !bounded {
            return Magnitudes::UNBOUNDED;
        }
        let mut lanes = [0u32; 8];
        // SAFETY: `lanes` holds 8 lanes of 32 bits.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), least) };
        let least = lanes.into_iter().min().unwrap_or(u32::MAX).wrapping_add(1);
        let min = if least < f32::INFINITY.to_bits() { f32::from_bits(least) } else { f32::INFINITY };
        Magnitudes { max: 1.0, min }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! The steps on one vector of 16 lanes per key, the same bits as the portable loops.

    use super::NR;
    use crate::exp::avx512::{exp16, exp16_nonpositive};
    use crate::gemm::magnitudes::Magnitudes;
    use crate::{ElementType, Float};
    use std::arch::x86_64::*;

    const _: () = assert!(NR == 16);

    /// The 16 lanes of `row`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn load(row: &[f32]) -> __m512 {
        let row = &row[..NR];
        // SAFETY: `row` holds 16 floats.
        unsafe { _mm512_loadu_ps(row.as_ptr()) }
    }

    /// Stores 16 lanes into `row`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn store(row: &mut [f32], lanes: __m512) {
        let row = &mut row[..NR];
        // SAFETY: `row` holds 16 floats.
        unsafe { _mm512_storeu_ps(row.as_mut_ptr(), lanes) }
    }

    /// Each lane rounded to `T` and widened back, as [`lanes::round8`](crate::lanes::round8):
    /// the identity for float32; bf16's round-to-nearest-even with every NaN made `0x7FC0`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn round<T: Float>(v: __m512) -> __m512 {
        if T::DTYPE == ElementType::F32 {
            return v;
        }
        let u = _mm512_castps_si512(v);
        let odd = _mm512_and_si512(_mm512_srli_epi32::<16>(u), _mm512_set1_epi32(1));
        let rounded = _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF)));
        let upper = _mm512_castsi512_ps(_mm512_and_si512(rounded, _mm512_set1_epi32(0xFFFF_0000_u32 as i32)));
        let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        _mm512_mask_blend_ps(nan, upper, _mm512_castsi512_ps(_mm512_set1_epi32(0x7FC0_0000)))
    }

    /// MLX's `maximum(x, m)` per lane.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn maximum(x: __m512, m: __m512) -> __m512 {
        let take = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, m) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
        _mm512_mask_blend_ps(take, m, x)
    }

    crate::cpu::target_entry! {
        Avx512;
        /// [`scores_tf`] behind the token that proves its target features.
        pub(super) fn scores[T: Float](
            rows: &mut [f32],
            mask: Option<&[f32]>,
            maximum_lanes: &mut [f32; NR],
        ) = scores_tf;
    }

    #[target_feature(enable = "avx512f")]
    fn scores_tf<T: Float>(rows: &mut [f32], mask: Option<&[f32]>, maximum_lanes: &mut [f32; NR]) {
        let mut m = load(maximum_lanes);
        match mask {
            None => {
                for row in rows.chunks_exact_mut(NR) {
                    let x = round::<T>(load(row));
                    store(row, x);
                    m = maximum(x, m);
                }
            }
            Some(mask) => {
                for (row, add) in rows.chunks_exact_mut(NR).zip(mask.chunks_exact(NR)) {
                    let x = round::<T>(_mm512_add_ps(round::<T>(load(row)), load(add)));
                    store(row, x);
                    m = maximum(x, m);
                }
            }
        }
        store(maximum_lanes, m);
    }

    crate::cpu::target_entry! {
        Avx512;
        /// [`exponentials_tf`] behind the token that proves its target features.
        pub(super) fn exponentials(scores: &mut [f32], maximum: &[f32; NR]) -> [f32; NR] = exponentials_tf;
    }

    #[target_feature(enable = "avx512f")]
    fn exponentials_tf(scores: &mut [f32], maximum: &[f32; NR]) -> [f32; NR] {
        let m = load(maximum);
        // Where every lane's maximum is finite, no score is NaN (a NaN would be the maximum)
        // and none exceeds it: every `s − m` is `≤ 0` or `−∞`.
        let magnitude = _mm512_abs_ps(m);
        let bounded = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(magnitude, _mm512_set1_ps(f32::INFINITY)) == 0xFFFF;
        let mut sum = _mm512_setzero_ps();
        for row in scores.chunks_exact_mut(NR) {
            let x = _mm512_sub_ps(load(row), m);
            let e = if bounded { exp16_nonpositive(x) } else { exp16(x) };
            sum = _mm512_add_ps(sum, e);
            store(row, e);
        }
        let mut out = [0.0f32; NR];
        store(&mut out, sum);
        out
    }

    crate::cpu::target_entry! {
        Avx512;
        /// [`normalize_tf`] behind the token that proves its target features.
        pub(super) fn normalize[T: Float](rows: &mut [f32], inverse: &[f32; NR]) -> Magnitudes = normalize_tf;
    }

    #[target_feature(enable = "avx512f")]
    fn normalize_tf<T: Float>(rows: &mut [f32], inverse: &[f32; NR]) -> Magnitudes {
        let inv = load(inverse);
        let bounded = T::DTYPE == ElementType::Bf16;
        // The smallest nonzero finite `p`, as the AVX2 lanes find it: `bits − 1` as unsigned
        // puts the zeros last and the NaNs above `+∞`.
        let one = _mm512_set1_epi32(1);
        let mut least = _mm512_set1_epi32(-1);
        for row in rows.chunks_exact_mut(NR) {
            let p = round::<T>(_mm512_mul_ps(load(row), inv));
            if bounded {
                least = _mm512_min_epu32(least, _mm512_sub_epi32(_mm512_castps_si512(p), one));
            }
            store(row, p);
        }
        if !bounded {
            return Magnitudes::UNBOUNDED;
        }
        let least = _mm512_reduce_min_epu32(least).wrapping_add(1);
        let min = if least < f32::INFINITY.to_bits() { f32::from_bits(least) } else { f32::INFINITY };
        Magnitudes { max: 1.0, min }
    }
}

#[cfg(target_arch = "aarch64")]
mod neon;
