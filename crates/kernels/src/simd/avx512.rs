//! The lanes vocabulary ([`simd`](super)) on AVX-512F: sixteen float32 lanes in a `__m512`,
//! masks in a mask register (`__mmask16`, one bit per lane).

use half::bf16;
use std::arch::x86_64::*;

/// Sixteen float32 lanes.
pub(crate) type V = __m512;
/// A mask of lanes: bit `i` set where lane `i` is.
pub(crate) type M = __mmask16;
/// Lanes per [`V`].
pub(crate) const LANES: usize = 16;

/// Every lane `x`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn splat(x: f32) -> V {
    _mm512_set1_ps(x)
}

/// The lanes of an array: the safe load of 16 floats.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn from_array(lanes: &[f32; LANES]) -> V {
    // SAFETY: `lanes` holds 16 readable floats.
    unsafe { _mm512_loadu_ps(lanes.as_ptr()) }
}

/// The lanes as an array: the safe store of 16 floats.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn to_array(v: V) -> [f32; LANES] {
    let mut lanes = [0f32; LANES];
    // SAFETY: `lanes` holds 16 floats.
    unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), v) };
    lanes
}

/// `a + b` per lane.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn add(a: V, b: V) -> V {
    _mm512_add_ps(a, b)
}

/// `a − b` per lane.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn sub(a: V, b: V) -> V {
    _mm512_sub_ps(a, b)
}

/// `a · b` per lane.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn mul(a: V, b: V) -> V {
    _mm512_mul_ps(a, b)
}

/// `a / b` per lane.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn div(a: V, b: V) -> V {
    _mm512_div_ps(a, b)
}

/// `√a` per lane (correctly rounded, as `sqrtf`).
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn sqrt(a: V) -> V {
    _mm512_sqrt_ps(a)
}

/// `a` with its sign bit flipped (NaNs included).
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn neg(a: V) -> V {
    _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(i32::MIN)))
}

/// `a` with its sign bit cleared.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn abs(a: V) -> V {
    _mm512_abs_ps(a)
}

/// `⌊a⌋` per lane.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn floor(a: V) -> V {
    _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(a)
}

/// `a · b + c` per lane, rounded once.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn mul_add(a: V, b: V, c: V) -> V {
    _mm512_fmadd_ps(a, b, c)
}

/// Lanes where `a > b`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn gt(a: V, b: V) -> M {
    _mm512_cmp_ps_mask::<_CMP_GT_OQ>(a, b)
}

/// Lanes where `a < b`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn lt(a: V, b: V) -> M {
    _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b)
}

/// Lanes where `a ≥ b`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn ge(a: V, b: V) -> M {
    _mm512_cmp_ps_mask::<_CMP_GE_OQ>(a, b)
}

/// Lanes where `a ≤ b`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn le(a: V, b: V) -> M {
    _mm512_cmp_ps_mask::<_CMP_LE_OQ>(a, b)
}

/// Lanes where `a = b`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn eq(a: V, b: V) -> M {
    _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b)
}

/// Lanes that are NaN.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn is_nan(a: V) -> M {
    _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a)
}

/// Lanes set in `a` or `b`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn or(a: M, b: M) -> M {
    a | b
}

/// Lanes set in `a` and `b`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn and(a: M, b: M) -> M {
    a & b
}

/// Lanes set in `a` and not in `b`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn and_not(a: M, b: M) -> M {
    a & !b
}

/// Whether every lane is set.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn all(m: M) -> bool {
    m == 0xFFFF
}

/// Which lanes are set.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn mask_lanes(m: M) -> [bool; LANES] {
    std::array::from_fn(|i| m & (1 << i) != 0)
}

/// `a` in the lanes `m` sets, `b` elsewhere.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn select(m: M, a: V, b: V) -> V {
    _mm512_mask_blend_ps(m, b, a)
}

/// `v` with the lanes `m` sets made `+0`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn clear(m: M, v: V) -> V {
    _mm512_maskz_mov_ps(!m, v)
}

/// The lanes' bits and `mask`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn bits_and(v: V, mask: u32) -> V {
    _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(mask as i32)))
}

/// Lanes whose bits and `mask` are zero.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn bits_zero(v: V, mask: u32) -> M {
    _mm512_testn_epi32_mask(_mm512_castps_si512(v), _mm512_set1_epi32(mask as i32))
}

/// Per lane, whichever of `a` and `b` has the smaller bits as an unsigned integer.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn min_bits(a: V, b: V) -> V {
    _mm512_castsi512_ps(_mm512_min_epu32(_mm512_castps_si512(a), _mm512_castps_si512(b)))
}

/// The lanes' bits plus `k` (wrapping).
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn add_bits(v: V, k: i32) -> V {
    _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(v), _mm512_set1_epi32(k)))
}

/// `2ⁿ` per lane for integral `n` in `[-127, 128]`: the bits `(int(n) + 127) << 23` (`int`
/// truncating; outside that range the bits are not a power of two, as in MLX's `exp`).
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn two_to(n: V) -> V {
    let biased = _mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127));
    _mm512_castsi512_ps(_mm512_slli_epi32::<23>(biased))
}

/// [`bf16_from_f32`](crate::bf16_from_f32) of each lane, as the float32 of the bf16 result:
/// [`round_bf16_not_nan`], every NaN made `0x7FC0`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn round_bf16(v: V) -> V {
    select(is_nan(v), _mm512_castsi512_ps(_mm512_set1_epi32(0x7FC0_0000)), round_bf16_not_nan(v))
}

/// [`round_bf16`](crate::gemm::arithmetic::round_bf16) of each lane, the integer rule without
/// the NaN test, in four operations: `u + 0x7FFF`, plus 1 in the lanes whose bit 16 is set
/// (a mask register), the low 16 bits cleared.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn round_bf16_not_nan(v: V) -> V {
    let u = _mm512_castps_si512(v);
    let odd = _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x1_0000));
    let half = _mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF));
    let rounded = _mm512_mask_add_epi32(half, odd, half, _mm512_set1_epi32(1));
    _mm512_castsi512_ps(_mm512_and_si512(rounded, _mm512_set1_epi32(0xFFFF_0000_u32 as i32)))
}

/// The 16 float32 values at `p`.
///
/// # Safety
/// `p` is valid for reading 16 consecutive `f32`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) unsafe fn load_f32(p: *const f32) -> V {
    // SAFETY: the caller gives 16 readable values.
    unsafe { _mm512_loadu_ps(p) }
}

/// The 16 bf16 values at `p`, widened (exactly) to float32.
///
/// # Safety
/// `p` is valid for reading 16 consecutive `bf16`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) unsafe fn load_bf16(p: *const bf16) -> V {
    // SAFETY: the caller gives 16 readable values (32 bytes).
    let halves = unsafe { _mm256_loadu_si256(p.cast::<__m256i>()) };
    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(halves)))
}

/// Stores the 16 lanes at `p` as float32.
///
/// # Safety
/// `p` is valid for writing 16 consecutive `f32`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) unsafe fn store_f32(p: *mut f32, v: V) {
    // SAFETY: the caller gives 16 writable values.
    unsafe { _mm512_storeu_ps(p, v) }
}

/// Stores the upper 16 bits of each lane at `p` as a bf16: the lanes' own bf16 values where
/// they are exact widenings of bf16 (NaN payloads kept); truncated otherwise.
///
/// # Safety
/// `p` is valid for writing 16 consecutive `bf16`.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) unsafe fn store_bf16_exact(p: *mut bf16, v: V) {
    let halves = _mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(_mm512_castps_si512(v)));
    // SAFETY: the caller gives 16 writable values (32 bytes).
    unsafe { _mm256_storeu_si256(p.cast::<__m256i>(), halves) }
}

/// The 16×16 transpose: lane `j` of `rows[i]` becomes lane `i` of the result's vector `j`. In
/// four rounds of sixteen two-source permutes: round `r` exchanges blocks of `2^(3 − r)` lanes
/// between rows `2^(3 − r)` apart.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) fn transpose(rows: [V; LANES]) -> [V; LANES] {
    let mut rows = rows;
    for round in 0..4 {
        let width = 8 >> round;
        // Lane `i` of the low result takes lane `i` of `a` where bit `width` of `i` is clear,
        // else lane `i − width` of `b`; the high result the mirror image.
        let low = _mm512_setr_epi32(
            index(0, width, false),
            index(1, width, false),
            index(2, width, false),
            index(3, width, false),
            index(4, width, false),
            index(5, width, false),
            index(6, width, false),
            index(7, width, false),
            index(8, width, false),
            index(9, width, false),
            index(10, width, false),
            index(11, width, false),
            index(12, width, false),
            index(13, width, false),
            index(14, width, false),
            index(15, width, false),
        );
        let high = _mm512_setr_epi32(
            index(0, width, true),
            index(1, width, true),
            index(2, width, true),
            index(3, width, true),
            index(4, width, true),
            index(5, width, true),
            index(6, width, true),
            index(7, width, true),
            index(8, width, true),
            index(9, width, true),
            index(10, width, true),
            index(11, width, true),
            index(12, width, true),
            index(13, width, true),
            index(14, width, true),
            index(15, width, true),
        );
        let before = rows;
        for i in (0..LANES).filter(|i| i & width == 0) {
            let (a, b) = (before[i], before[i + width]);
            rows[i] = _mm512_permutex2var_ps(a, low, b);
            rows[i + width] = _mm512_permutex2var_ps(a, high, b);
        }
    }
    rows
}

/// The index of lane `i` in [`transpose`]'s exchange of blocks of `width` lanes (`16 +` an
/// index picks the second source): the low result keeps `a`'s lanes whose bit `width` is
/// clear and takes `b`'s `width` below them; the high result takes `a`'s `width` above and
/// keeps `b`'s whose bit is set.
const fn index(i: i32, width: usize, high: bool) -> i32 {
    let width = width as i32;
    match (high, i & width == 0) {
        (false, true) => i,
        (false, false) => 16 + i - width,
        (true, true) => i + width,
        (true, false) => 16 + i,
    }
}

super::derived!(Avx512 "avx512f,avx2,fma");
