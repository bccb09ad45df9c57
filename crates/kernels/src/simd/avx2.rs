//! The lanes vocabulary ([`simd`](super)) on AVX2 + FMA: eight float32 lanes in a `__m256`,
//! masks as `__m256` compare results (all ones or zeros per lane).

use half::bf16;
use std::arch::x86_64::*;

/// Eight float32 lanes.
pub(crate) type V = __m256;
/// A mask of lanes: all ones where set.
pub(crate) type M = __m256;
/// Lanes per [`V`].
pub(crate) const LANES: usize = 8;

/// Every lane `x`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn splat(x: f32) -> V {
    _mm256_set1_ps(x)
}

/// The lanes of an array: the safe load of 8 floats.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn from_array(lanes: &[f32; LANES]) -> V {
    // SAFETY: `lanes` holds 8 readable floats.
    unsafe { _mm256_loadu_ps(lanes.as_ptr()) }
}

/// The lanes as an array: the safe store of 8 floats.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn to_array(v: V) -> [f32; LANES] {
    let mut lanes = [0f32; LANES];
    // SAFETY: `lanes` holds 8 floats.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), v) };
    lanes
}

/// `a + b` per lane.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn add(a: V, b: V) -> V {
    _mm256_add_ps(a, b)
}

/// `a − b` per lane.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn sub(a: V, b: V) -> V {
    _mm256_sub_ps(a, b)
}

/// `a · b` per lane.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn mul(a: V, b: V) -> V {
    _mm256_mul_ps(a, b)
}

/// `a / b` per lane.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn div(a: V, b: V) -> V {
    _mm256_div_ps(a, b)
}

/// `√a` per lane (correctly rounded, as `sqrtf`).
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn sqrt(a: V) -> V {
    _mm256_sqrt_ps(a)
}

/// `a` with its sign bit flipped (NaNs included).
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn neg(a: V) -> V {
    _mm256_xor_ps(a, _mm256_set1_ps(-0.0))
}

/// `a` with its sign bit cleared.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn abs(a: V) -> V {
    _mm256_andnot_ps(_mm256_set1_ps(-0.0), a)
}

/// `⌊a⌋` per lane.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn floor(a: V) -> V {
    _mm256_floor_ps(a)
}

/// `a · b + c` per lane, rounded once.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn mul_add(a: V, b: V, c: V) -> V {
    _mm256_fmadd_ps(a, b, c)
}

/// Lanes where `a > b`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn gt(a: V, b: V) -> M {
    _mm256_cmp_ps::<_CMP_GT_OQ>(a, b)
}

/// Lanes where `a < b`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn lt(a: V, b: V) -> M {
    _mm256_cmp_ps::<_CMP_LT_OQ>(a, b)
}

/// Lanes where `a ≥ b`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn ge(a: V, b: V) -> M {
    _mm256_cmp_ps::<_CMP_GE_OQ>(a, b)
}

/// Lanes where `a ≤ b`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn le(a: V, b: V) -> M {
    _mm256_cmp_ps::<_CMP_LE_OQ>(a, b)
}

/// Lanes where `a = b`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn eq(a: V, b: V) -> M {
    _mm256_cmp_ps::<_CMP_EQ_OQ>(a, b)
}

/// Lanes that are NaN.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn is_nan(a: V) -> M {
    _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a)
}

/// Lanes set in `a` or `b`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn or(a: M, b: M) -> M {
    _mm256_or_ps(a, b)
}

/// Lanes set in `a` and `b`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn and(a: M, b: M) -> M {
    _mm256_and_ps(a, b)
}

/// Lanes set in `a` and not in `b`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn and_not(a: M, b: M) -> M {
    _mm256_andnot_ps(b, a)
}

/// Whether every lane is set.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn all(m: M) -> bool {
    _mm256_movemask_ps(m) == 0xFF
}

/// Which lanes are set.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn mask_lanes(m: M) -> [bool; LANES] {
    let bits = _mm256_movemask_ps(m);
    std::array::from_fn(|i| bits & (1 << i) != 0)
}

/// `a` in the lanes `m` sets, `b` elsewhere.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn select(m: M, a: V, b: V) -> V {
    _mm256_blendv_ps(b, a, m)
}

/// `v` with the lanes `m` sets made `+0`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn clear(m: M, v: V) -> V {
    _mm256_andnot_ps(m, v)
}

/// The lanes' bits and `mask`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn bits_and(v: V, mask: u32) -> V {
    _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(mask as i32)))
}

/// Lanes whose bits and `mask` are zero.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn bits_zero(v: V, mask: u32) -> M {
    let masked = _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(mask as i32));
    _mm256_castsi256_ps(_mm256_cmpeq_epi32(masked, _mm256_setzero_si256()))
}

/// Per lane, whichever of `a` and `b` has the smaller bits as an unsigned integer.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn min_bits(a: V, b: V) -> V {
    _mm256_castsi256_ps(_mm256_min_epu32(_mm256_castps_si256(a), _mm256_castps_si256(b)))
}

/// The lanes' bits plus `k` (wrapping).
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn add_bits(v: V, k: i32) -> V {
    _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(v), _mm256_set1_epi32(k)))
}

/// `2ⁿ` per lane for integral `n` in `[-127, 128]`: the bits `(int(n) + 127) << 23` (`int`
/// truncating; outside that range the bits are not a power of two, as in MLX's `exp`).
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn two_to(n: V) -> V {
    let biased = _mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127));
    _mm256_castsi256_ps(_mm256_slli_epi32::<23>(biased))
}

/// [`bf16_from_f32`](crate::bf16_from_f32) of each lane, as the float32 of the bf16 result:
/// [`round_bf16_not_nan`], every NaN made `0x7FC0`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn round_bf16(v: V) -> V {
    _mm256_blendv_ps(round_bf16_not_nan(v), _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC0_0000)), is_nan(v))
}

/// [`round_bf16`](crate::gemm::arithmetic::round_bf16) of each lane: round to nearest even on
/// the upper 16 bits, the integer rule without the NaN test (a NaN whose low 16 bits are zero
/// comes back unchanged; the bf16 arithmetic only meets such NaNs).
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn round_bf16_not_nan(v: V) -> V {
    let u = _mm256_castps_si256(v);
    let odd = _mm256_and_si256(_mm256_srli_epi32::<16>(u), _mm256_set1_epi32(1));
    let rounded = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), odd);
    _mm256_castsi256_ps(_mm256_and_si256(rounded, _mm256_set1_epi32(0xFFFF_0000_u32 as i32)))
}

/// The 8 float32 values at `p`.
///
/// # Safety
/// `p` is valid for reading 8 consecutive `f32`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn load_f32(p: *const f32) -> V {
    // SAFETY: the caller gives 8 readable values.
    unsafe { _mm256_loadu_ps(p) }
}

/// The 8 bf16 values at `p`, widened (exactly) to float32.
///
/// # Safety
/// `p` is valid for reading 8 consecutive `bf16`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn load_bf16(p: *const bf16) -> V {
    // SAFETY: the caller gives 8 readable values (16 bytes).
    let halves = unsafe { _mm_loadu_si128(p.cast::<__m128i>()) };
    _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(halves)))
}

/// Stores the 8 lanes at `p` as float32.
///
/// # Safety
/// `p` is valid for writing 8 consecutive `f32`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn store_f32(p: *mut f32, v: V) {
    // SAFETY: the caller gives 8 writable values.
    unsafe { _mm256_storeu_ps(p, v) }
}

/// Stores the upper 16 bits of each lane at `p` as a bf16: the lanes' own bf16 values where
/// they are exact widenings of bf16 (NaN payloads kept); truncated otherwise.
///
/// # Safety
/// `p` is valid for writing 8 consecutive `bf16`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn store_bf16_exact(p: *mut bf16, v: V) {
    let bits = _mm256_srli_epi32::<16>(_mm256_castps_si256(v));
    let packed = _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256::<1>(bits));
    // SAFETY: the caller gives 8 writable values (16 bytes).
    unsafe { _mm_storeu_si128(p.cast::<__m128i>(), packed) }
}

/// The 8×8 transpose: lane `j` of `rows[i]` becomes lane `i` of the result's vector `j`.
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn transpose(rows: [V; LANES]) -> [V; LANES] {
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

super::derived!(Avx2 "avx2,fma");
