//! Eight float32 lanes (AVX2) read from and written to slices of any [`Float`], with MLX's
//! conversions: the loads widen exactly, the stores and [`round8`] narrow as
//! [`bf16_from_f32`](crate::bf16_from_f32) does. Shared by the element-wise and row kernels.

use crate::Float;
use crate::element::is;
use half::bf16;
use std::arch::x86_64::*;

/// MLX's `clip(v, lo, hi)` per lane ([`clip_scalar`](crate::elementwise::clip_scalar) on
/// float32 values): `maximum(v, lo)` then `minimum(·, hi)`, a NaN lane kept, a NaN bound taken
/// (with its bits: a caller storing bf16 leaves NaN bounds to the scalar clip). The AVX2 twin of
/// `lanes_neon::clip4`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn clip8(v: __m256, (lo, hi): (f32, f32)) -> __m256 {
    let keep = |take: __m256, v: __m256| _mm256_or_ps(take, _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
    let (lo, hi) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
    let v = _mm256_blendv_ps(lo, v, keep(_mm256_cmp_ps::<_CMP_GT_OQ>(v, lo), v));
    _mm256_blendv_ps(hi, v, keep(_mm256_cmp_ps::<_CMP_LT_OQ>(v, hi), v))
}

/// The 8 values at `p` widened to float32.
///
/// # Safety
/// `p` is valid for reading 8 consecutive `T`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn load8<T: Float>(p: *const T) -> __m256 {
    if is::<T, f32>() {
        // SAFETY: `T` is `f32`; the caller gives 8 readable values.
        unsafe { _mm256_loadu_ps(p.cast::<f32>()) }
    } else if is::<T, bf16>() {
        // SAFETY: `T` is `bf16` (16 bits each): 16 readable bytes.
        let halves = unsafe { _mm_loadu_si128(p.cast::<__m128i>()) };
        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(halves)))
    } else {
        let mut lanes = [0f32; 8];
        for (i, lane) in lanes.iter_mut().enumerate() {
            // SAFETY: `i < 8`; the caller gives 8 readable values.
            *lane = unsafe { p.add(i).read() }.to_f32();
        }
        // SAFETY: `lanes` holds 8 floats.
        unsafe { _mm256_loadu_ps(lanes.as_ptr()) }
    }
}

/// Each lane rounded to `T` (as MLX's `static_cast<T>(float)`) and widened back: the identity
/// for float32, bf16's round-to-nearest-even with every NaN made `0x7FC0` for bf16.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn round8<T: Float>(v: __m256) -> __m256 {
    if is::<T, f32>() {
        v
    } else if is::<T, bf16>() {
        round8_bf16(v)
    } else {
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds 8 floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) };
        for lane in &mut lanes {
            *lane = T::from_f32(*lane).to_f32();
        }
        // SAFETY: as above.
        unsafe { _mm256_loadu_ps(lanes.as_ptr()) }
    }
}

/// [`bf16_from_f32`](crate::bf16_from_f32) of each lane, as the float32 of the bf16 result.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn round8_bf16(v: __m256) -> __m256 {
    let u = _mm256_castps_si256(v);
    let odd = _mm256_and_si256(_mm256_srli_epi32::<16>(u), _mm256_set1_epi32(1));
    let rounded = _mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF)));
    let upper = _mm256_castsi256_ps(_mm256_and_si256(rounded, _mm256_set1_epi32(0xFFFF_0000_u32 as i32)));
    let nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v);
    _mm256_blendv_ps(upper, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC0_0000)), nan)
}

/// Stores the 8 lanes at `p`, each narrowed to `T` as MLX narrows.
///
/// # Safety
/// `p` is valid for writing 8 consecutive `T`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn store8<T: Float>(p: *mut T, v: __m256) {
    if is::<T, f32>() {
        // SAFETY: `T` is `f32`; the caller gives 8 writable values.
        unsafe { _mm256_storeu_ps(p.cast::<f32>(), v) }
    } else if is::<T, bf16>() {
        let bits = _mm256_srli_epi32::<16>(_mm256_castps_si256(round8_bf16(v)));
        let packed = _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256::<1>(bits));
        // SAFETY: `T` is `bf16`: 16 writable bytes.
        unsafe { _mm_storeu_si128(p.cast::<__m128i>(), packed) }
    } else {
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds 8 floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) };
        for (i, lane) in lanes.iter().enumerate() {
            // SAFETY: `i < 8`; the caller gives 8 writable values.
            unsafe { p.add(i).write(T::from_f32(*lane)) };
        }
    }
}

/// Stores 8 lanes that are exact widenings of `T` values (loaded by [`load8`], or selected
/// among such) back to those values, bit for bit: no rounding, NaN payloads kept (for the
/// [`native`](crate::element::native) types; others go through [`Float::from_f32`]).
///
/// # Safety
/// `p` is valid for writing 8 consecutive `T`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn store8_exact<T: Float>(p: *mut T, v: __m256) {
    if is::<T, bf16>() {
        let bits = _mm256_srli_epi32::<16>(_mm256_castps_si256(v));
        let packed = _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256::<1>(bits));
        // SAFETY: `T` is `bf16`: 16 writable bytes.
        unsafe { _mm_storeu_si128(p.cast::<__m128i>(), packed) }
    } else {
        // SAFETY: the caller's guarantee; narrowing an exact widening is exact for f32.
        unsafe { store8(p, v) }
    }
}

/// The 8×8 transpose: lane `j` of `rows[i]` becomes lane `i` of the result's vector `j`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn transpose8(rows: [__m256; 8]) -> [__m256; 8] {
    let [r0, r1, r2, r3, r4, r5, r6, r7] = rows;
    let t0 = _mm256_unpacklo_ps(r0, r1);
    let t1 = _mm256_unpackhi_ps(r0, r1);
    let t2 = _mm256_unpacklo_ps(r2, r3);
    let t3 = _mm256_unpackhi_ps(r2, r3);
    let t4 = _mm256_unpacklo_ps(r4, r5);
    let t5 = _mm256_unpackhi_ps(r4, r5);
    let t6 = _mm256_unpacklo_ps(r6, r7);
    let t7 = _mm256_unpackhi_ps(r6, r7);
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
        _mm256_permute2f128_ps::<0x31>(s2, s6),
        _mm256_permute2f128_ps::<0x31>(s3, s7),
    ]
}

/// Lane `i` holds `f32(rows[i][column])`.
///
/// # Safety
/// Each `rows[i]` is valid for reading at offset `column`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn column8<T: Float>(rows: &[*const T; 8], column: usize) -> __m256 {
    let mut lanes = [0f32; 8];
    for (lane, row) in lanes.iter_mut().zip(rows) {
        // SAFETY: the caller guarantees `row + column` is readable.
        *lane = unsafe { row.add(column).read() }.to_f32();
    }
    // SAFETY: `lanes` holds 8 floats.
    unsafe { _mm256_loadu_ps(lanes.as_ptr()) }
}

/// Lane `i` holds `0 + term(rows[i][0]) + term(rows[i][1]) + …` over `dim` columns, summed in
/// column order in float32, as MLX's sequential reductions sum (one row per lane, so no row's
/// order changes). `term` maps 8 widened values to 8 terms.
///
/// # Safety
/// Each `rows[i]` is valid for reading `dim` values.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn row_sums8<T: Float>(rows: &[*const T; 8], dim: usize, term: impl Fn(__m256) -> __m256) -> __m256 {
    let mut sum = _mm256_setzero_ps();
    let mut column = 0;
    while column + 8 <= dim {
        // SAFETY: columns `column..column + 8` of every row are readable.
        let block = std::array::from_fn(|i| unsafe { load8(rows[i].add(column)) });
        for values in transpose8(block) {
            sum = _mm256_add_ps(sum, term(values));
        }
        column += 8;
    }
    while column < dim {
        // SAFETY: `column < dim`.
        sum = _mm256_add_ps(sum, term(unsafe { column8(rows, column) }));
        column += 1;
    }
    sum
}

/// Pointers to rows `first..first + 8` of `x` (rows of `dim`), the last row repeated past the
/// end (those lanes are computed and ignored). `first` is a row of `x`.
#[inline]
pub(crate) fn row_pointers<T>(x: &[T], dim: usize, first: usize) -> [*const T; 8] {
    let rows = x.len() / dim.max(1);
    std::array::from_fn(|i| x[(first + i).min(rows.saturating_sub(1)) * dim..].as_ptr())
}

/// [`load8`] of `x[c..c + 8]`: the safe load (it panics unless `c + 8 <= x.len()`, which
/// the callers' loop bounds ensure).
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn load_at<T: Float>(x: &[T], c: usize) -> __m256 {
    let x = &x[c..c + 8];
    // SAFETY: `x` holds 8 readable values.
    unsafe { load8(x.as_ptr()) }
}

/// [`store8`] of `v` into `x[c..c + 8]`: the safe store (it panics unless `c + 8 <= x.len()`).
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn store_at<T: Float>(x: &mut [T], c: usize, v: __m256) {
    let x = &mut x[c..c + 8];
    // SAFETY: `x` holds 8 writable values.
    unsafe { store8(x.as_mut_ptr(), v) }
}

/// [`store8_exact`] of `v` into `x[c..c + 8]`: the safe store (it panics unless
/// `c + 8 <= x.len()`).
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn store_exact_at<T: Float>(x: &mut [T], c: usize, v: __m256) {
    let x = &mut x[c..c + 8];
    // SAFETY: `x` holds 8 writable values.
    unsafe { store8_exact(x.as_mut_ptr(), v) }
}

/// The 8 lanes of an array: the safe load of 8 floats.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn from_array(lanes: &[f32; 8]) -> __m256 {
    // SAFETY: `lanes` holds 8 readable floats.
    unsafe { _mm256_loadu_ps(lanes.as_ptr()) }
}

/// The 8 lanes as an array: the safe store of 8 floats.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn to_array(v: __m256) -> [f32; 8] {
    let mut lanes = [0f32; 8];
    // SAFETY: `lanes` holds 8 floats.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) };
    lanes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bf16_from_f32;

    #[test]
    fn loads_stores_and_rounding_match_the_scalar_conversions() {
        if crate::cpu::isa().avx2().is_none() {
            return;
        }
        let mut values: Vec<f32> = (0..4096).map(|i| f32::from_bits((i as u32).wrapping_mul(0x9E37_79B9))).collect();
        values.extend([f32::NAN, -f32::NAN, f32::from_bits(0x7F80_0001), f32::INFINITY, -0.0, 1.0 + 2f32.powi(-8)]);
        values.resize(values.len().next_multiple_of(8), 3.0);
        for chunk in values.chunks_exact(8) {
            // SAFETY: AVX2 is present; `chunk` and the outputs hold 8 values.
            unsafe {
                let v = load8(chunk.as_ptr());
                let rounded = to_array(round8::<bf16>(v));
                let mut stored = [bf16::ZERO; 8];
                store8(stored.as_mut_ptr(), v);
                let mut back = [0f32; 8];
                store8(back.as_mut_ptr(), load8(stored.as_ptr()));
                for i in 0..8 {
                    let want = bf16_from_f32(chunk[i]);
                    assert_eq!(stored[i].to_bits(), want.to_bits(), "{:#x}", chunk[i].to_bits());
                    assert_eq!(rounded[i].to_bits(), want.to_f32().to_bits());
                    assert_eq!(back[i].to_bits(), want.to_f32().to_bits());
                }
                assert_eq!(to_array(v).map(f32::to_bits), <[f32; 8]>::try_from(chunk).unwrap().map(f32::to_bits));
            }
        }
    }

    #[test]
    fn transpose_moves_lane_j_of_row_i_to_lane_i_of_row_j() {
        if crate::cpu::isa().avx2().is_none() {
            return;
        }
        let m: Vec<f32> = (0..64).map(|i| i as f32).collect();
        // SAFETY: AVX2 is present; every row holds 8 values.
        unsafe {
            let rows = std::array::from_fn(|i| load8(m[i * 8..].as_ptr()));
            let t = transpose8(rows).map(|v| to_array(v));
            for (j, row) in t.iter().enumerate() {
                for (i, &v) in row.iter().enumerate() {
                    assert_eq!(v, (i * 8 + j) as f32);
                }
            }
        }
    }
}
