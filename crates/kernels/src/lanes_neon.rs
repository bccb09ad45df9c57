//! Four float32 lanes (NEON, aarch64) read from and written to slices of any [`Float`], with
//! MLX's conversions: the loads widen exactly, the stores and [`round4`] narrow as
//! [`bf16_from_f32`](crate::bf16_from_f32) does. The NEON counterpart of `lanes` (AVX2), shared
//! by the matrix products' store, the softmax and the row kernels.

use crate::Float;
use crate::element::is;
use half::bf16;
use std::arch::aarch64::*;

/// The 4 values at `p` widened to float32.
///
/// # Safety
/// `p` is valid for reading 4 consecutive `T`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) unsafe fn load4<T: Float>(p: *const T) -> float32x4_t {
    if is::<T, f32>() {
        // SAFETY: `T` is `f32`; the caller gives 4 readable values.
        unsafe { vld1q_f32(p.cast::<f32>()) }
    } else if is::<T, bf16>() {
        // SAFETY: `T` is `bf16` (16 bits each): 8 readable bytes.
        let halves = unsafe { vld1_u16(p.cast::<u16>()) };
        vreinterpretq_f32_u32(vshll_n_u16::<16>(halves))
    } else {
        // SAFETY: `i < 4`; the caller gives 4 readable values.
        let lanes: [f32; 4] = std::array::from_fn(|i| unsafe { p.add(i).read() }.to_f32());
        from_array(&lanes)
    }
}

/// [`bf16_from_f32`](crate::bf16_from_f32) of each lane, as the float32 of the bf16 result:
/// round to nearest even on the upper 16 bits, every NaN made `0x7FC0`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn round4_bf16(v: float32x4_t) -> float32x4_t {
    let upper = round4_bf16_not_nan(v);
    // All ones where `v` is not NaN (a NaN is unequal to itself).
    let ordered = vceqq_f32(v, v);
    vbslq_f32(ordered, upper, vreinterpretq_f32_u32(vdupq_n_u32(0x7FC0_0000)))
}

/// [`round_bf16`](crate::gemm::arithmetic::round_bf16) of each lane: the integer rule of
/// [`round4_bf16`] without the NaN test (a NaN whose low 16 bits are zero comes back
/// unchanged; the bf16 arithmetic only meets such NaNs).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn round4_bf16_not_nan(v: float32x4_t) -> float32x4_t {
    let u = vreinterpretq_u32_f32(v);
    let odd = vandq_u32(vshrq_n_u32::<16>(u), vdupq_n_u32(1));
    let rounded = vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7FFF)), odd);
    vreinterpretq_f32_u32(vandq_u32(rounded, vdupq_n_u32(0xFFFF_0000)))
}

/// Each lane rounded to `T` (as MLX's `static_cast<T>(float)`) and widened back: the identity
/// for float32, [`round4_bf16`] for bf16.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn round4<T: Float>(v: float32x4_t) -> float32x4_t {
    if is::<T, f32>() {
        v
    } else if is::<T, bf16>() {
        round4_bf16(v)
    } else {
        from_array(&to_array(v).map(|lane| T::from_f32(lane).to_f32()))
    }
}

/// Stores the 4 lanes at `p`, each narrowed to `T` as MLX narrows.
///
/// # Safety
/// `p` is valid for writing 4 consecutive `T`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) unsafe fn store4<T: Float>(p: *mut T, v: float32x4_t) {
    if is::<T, f32>() {
        // SAFETY: `T` is `f32`; the caller gives 4 writable values.
        unsafe { vst1q_f32(p.cast::<f32>(), v) }
    } else if is::<T, bf16>() {
        let bits = vshrn_n_u32::<16>(vreinterpretq_u32_f32(round4_bf16(v)));
        // SAFETY: `T` is `bf16`: 8 writable bytes.
        unsafe { vst1_u16(p.cast::<u16>(), bits) }
    } else {
        for (i, lane) in to_array(v).into_iter().enumerate() {
            // SAFETY: `i < 4`; the caller gives 4 writable values.
            unsafe { p.add(i).write(T::from_f32(lane)) };
        }
    }
}

/// Stores 4 lanes that are exact widenings of `T` values (loaded by [`load4`], or selected
/// among such) back to those values, bit for bit: no rounding, NaN payloads kept (for `f32`
/// and `bf16`; others go through [`Float::from_f32`]).
///
/// # Safety
/// `p` is valid for writing 4 consecutive `T`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) unsafe fn store4_exact<T: Float>(p: *mut T, v: float32x4_t) {
    if is::<T, bf16>() {
        let bits = vshrn_n_u32::<16>(vreinterpretq_u32_f32(v));
        // SAFETY: `T` is `bf16`: 8 writable bytes.
        unsafe { vst1_u16(p.cast::<u16>(), bits) }
    } else {
        // SAFETY: the caller's guarantee; narrowing an exact widening is exact for f32.
        unsafe { store4(p, v) }
    }
}

/// [`store4_exact`] of `v` into `x[c..c + 4]`: the safe store (it panics unless
/// `c + 4 <= x.len()`).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn store_exact_at<T: Float>(x: &mut [T], c: usize, v: float32x4_t) {
    let x = &mut x[c..c + 4];
    // SAFETY: `x` holds 4 writable values.
    unsafe { store4_exact(x.as_mut_ptr(), v) }
}

/// [`load4`] of `x[c..c + 4]`: the safe load (it panics unless `c + 4 <= x.len()`).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn load_at<T: Float>(x: &[T], c: usize) -> float32x4_t {
    let x = &x[c..c + 4];
    // SAFETY: `x` holds 4 readable values.
    unsafe { load4(x.as_ptr()) }
}

/// [`store4`] of `v` into `x[c..c + 4]`: the safe store (it panics unless `c + 4 <= x.len()`).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn store_at<T: Float>(x: &mut [T], c: usize, v: float32x4_t) {
    let x = &mut x[c..c + 4];
    // SAFETY: `x` holds 4 writable values.
    unsafe { store4(x.as_mut_ptr(), v) }
}

/// The 4 lanes of an array: the safe load of 4 floats.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn from_array(lanes: &[f32; 4]) -> float32x4_t {
    // SAFETY: `lanes` holds 4 readable floats.
    unsafe { vld1q_f32(lanes.as_ptr()) }
}

/// The 4 lanes as an array: the safe store of 4 floats.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn to_array(v: float32x4_t) -> [f32; 4] {
    let mut lanes = [0f32; 4];
    // SAFETY: `lanes` holds 4 floats.
    unsafe { vst1q_f32(lanes.as_mut_ptr(), v) };
    lanes
}

/// All ones in the lanes of `v` that are NaN.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn is_nan(v: float32x4_t) -> uint32x4_t {
    vmvnq_u32(vceqq_f32(v, v))
}

/// MLX's `maximum(x, m)` per lane: `x` where it is NaN or larger, else `m`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn maximum(x: float32x4_t, m: float32x4_t) -> float32x4_t {
    vbslq_f32(vorrq_u32(vcgtq_f32(x, m), is_nan(x)), x, m)
}

/// MLX's `clip(v, lo, hi)` per lane ([`clip_scalar`](crate::elementwise::clip_scalar) on
/// float32 values): `maximum(v, lo)` then `minimum(·, hi)`, a NaN lane kept, a NaN bound
/// taken (with its bits: a caller storing bf16 leaves NaN bounds to the scalar clip).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn clip4(v: float32x4_t, (lo, hi): (f32, f32)) -> float32x4_t {
    let v = vbslq_f32(vorrq_u32(vcgtq_f32(v, vdupq_n_f32(lo)), is_nan(v)), v, vdupq_n_f32(lo));
    vbslq_f32(vorrq_u32(vcltq_f32(v, vdupq_n_f32(hi)), is_nan(v)), v, vdupq_n_f32(hi))
}

/// The 4×4 transpose: lane `j` of `rows[i]` becomes lane `i` of the result's vector `j`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn transpose4(rows: [float32x4_t; 4]) -> [float32x4_t; 4] {
    let [r0, r1, r2, r3] = rows;
    // (r0[0], r1[0], r0[2], r1[2]) and (r0[1], r1[1], r0[3], r1[3]); likewise for rows 2, 3.
    let (t0, t1) = (vtrn1q_f32(r0, r1), vtrn2q_f32(r0, r1));
    let (t2, t3) = (vtrn1q_f32(r2, r3), vtrn2q_f32(r2, r3));
    let pairs = |a: float32x4_t| vreinterpretq_f64_f32(a);
    let back = |a: float64x2_t| vreinterpretq_f32_f64(a);
    [
        back(vtrn1q_f64(pairs(t0), pairs(t2))),
        back(vtrn1q_f64(pairs(t1), pairs(t3))),
        back(vtrn2q_f64(pairs(t0), pairs(t2))),
        back(vtrn2q_f64(pairs(t1), pairs(t3))),
    ]
}

/// Lane `i` holds `0 + term(rows[i][0]) + term(rows[i][1]) + …` over `dim` columns, summed in
/// column order in float32, as MLX's sequential reductions sum (one row per lane, so no row's
/// order changes). `term` maps 4 widened values to 4 terms.
///
/// # Safety
/// Each `rows[i]` is valid for reading `dim` values.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) unsafe fn row_sums4<T: Float>(
    rows: &[*const T; 4],
    dim: usize,
    term: impl Fn(float32x4_t) -> float32x4_t,
) -> float32x4_t {
    let mut sum = vdupq_n_f32(0.0);
    let mut column = 0;
    while column + 4 <= dim {
        // SAFETY: columns `column..column + 4` of every row are readable.
        let block = std::array::from_fn(|i| unsafe { load4(rows[i].add(column)) });
        for values in transpose4(block) {
            sum = vaddq_f32(sum, term(values));
        }
        column += 4;
    }
    while column < dim {
        // SAFETY: `column < dim`: column `column` of every row is readable.
        let lanes = std::array::from_fn(|i| unsafe { rows[i].add(column).read() }.to_f32());
        sum = vaddq_f32(sum, term(from_array(&lanes)));
        column += 1;
    }
    sum
}

/// Pointers to rows `first..first + 4` of `x` (rows of `dim`), the last row repeated past the
/// end (those lanes are computed and ignored). `first` is a row of `x`.
#[inline]
pub(crate) fn row_pointers<T>(x: &[T], dim: usize, first: usize) -> [*const T; 4] {
    let rows = x.len() / dim.max(1);
    std::array::from_fn(|i| x[(first + i).min(rows.saturating_sub(1)) * dim..].as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bf16_from_f32;

    crate::cpu::target_entry! {
        Neon;
        /// [`conversions_tf`] behind the token that proves its target features.
        fn conversions(chunk: &[f32; 4]) -> ([u16; 4], [f32; 4], [f32; 4], [f32; 4]) = conversions_tf;
    }

    /// A chunk's bf16 store, its `round4` and `round4_bf16_not_nan`, and the store of the
    /// reloaded bf16 values as float32.
    #[target_feature(enable = "neon")]
    fn conversions_tf(chunk: &[f32; 4]) -> ([u16; 4], [f32; 4], [f32; 4], [f32; 4]) {
        let v = from_array(chunk);
        let mut stored = [bf16::ZERO; 4];
        let mut back = [0f32; 4];
        // SAFETY: each array holds 4 values.
        unsafe {
            store4(stored.as_mut_ptr(), v);
            store4(back.as_mut_ptr(), load4(stored.as_ptr()));
        }
        (stored.map(bf16::to_bits), to_array(round4::<bf16>(v)), to_array(round4_bf16_not_nan(v)), back)
    }

    #[test]
    fn loads_stores_and_rounding_match_the_scalar_conversions() {
        let Some(neon) = crate::cpu::isa().neon() else { return };
        let mut values: Vec<f32> = (0..4096).map(|i| f32::from_bits((i as u32).wrapping_mul(0x9E37_79B9))).collect();
        values.extend([f32::NAN, -f32::NAN, f32::from_bits(0x7F80_0001), f32::INFINITY, -0.0, 1.0 + 2f32.powi(-8)]);
        values.extend([f32::from_bits(1), f32::from_bits(0x807F_FFFF), f32::MAX, f32::from_bits(0x7FC0_0000)]);
        values.resize(values.len().next_multiple_of(4), 3.0);
        for chunk in values.as_chunks::<4>().0 {
            let (stored, rounded, integer, back) = conversions(neon, chunk);
            for i in 0..4 {
                let want = bf16_from_f32(chunk[i]);
                assert_eq!(stored[i], want.to_bits(), "{:#x}", chunk[i].to_bits());
                assert_eq!(rounded[i].to_bits(), want.to_f32().to_bits());
                assert_eq!(back[i].to_bits(), want.to_f32().to_bits());
                if !chunk[i].is_nan() {
                    let rule = crate::gemm::arithmetic::round_bf16(chunk[i]);
                    assert_eq!(integer[i].to_bits(), rule.to_bits());
                }
            }
        }
    }

    crate::cpu::target_entry! {
        Neon;
        /// [`transposed_tf`] behind the token that proves its target features.
        fn transposed(m: &[f32; 16]) -> [[f32; 4]; 4] = transposed_tf;
    }

    #[target_feature(enable = "neon")]
    fn transposed_tf(m: &[f32; 16]) -> [[f32; 4]; 4] {
        let rows = m.as_chunks::<4>().0;
        let columns = transpose4(std::array::from_fn(|i| from_array(&rows[i])));
        std::array::from_fn(|j| to_array(columns[j]))
    }

    #[test]
    fn transpose_moves_lane_j_of_row_i_to_lane_i_of_row_j() {
        let Some(neon) = crate::cpu::isa().neon() else { return };
        let m: [f32; 16] = std::array::from_fn(|i| i as f32);
        for (j, row) in transposed(neon, &m).iter().enumerate() {
            for (i, &v) in row.iter().enumerate() {
                assert_eq!(v, (i * 4 + j) as f32);
            }
        }
    }
}
