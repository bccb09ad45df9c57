//! The lanes vocabulary ([`simd`](super)) on NEON (aarch64): four float32 lanes in a
//! `float32x4_t`, masks as `uint32x4_t` compare results (all ones or zeros per lane).

use half::bf16;
use std::arch::aarch64::*;

/// Four float32 lanes.
pub(crate) type V = float32x4_t;
/// A mask of lanes: all ones where set.
pub(crate) type M = uint32x4_t;
/// Lanes per [`V`].
pub(crate) const LANES: usize = 4;

/// Every lane `x`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn splat(x: f32) -> V {
    vdupq_n_f32(x)
}

/// The lanes of an array: the safe load of 4 floats.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn from_array(lanes: &[f32; LANES]) -> V {
    // SAFETY: `lanes` holds 4 readable floats.
    unsafe { vld1q_f32(lanes.as_ptr()) }
}

/// The lanes as an array: the safe store of 4 floats.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn to_array(v: V) -> [f32; LANES] {
    let mut lanes = [0f32; LANES];
    // SAFETY: `lanes` holds 4 floats.
    unsafe { vst1q_f32(lanes.as_mut_ptr(), v) };
    lanes
}

/// `a + b` per lane.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn add(a: V, b: V) -> V {
    vaddq_f32(a, b)
}

/// `a − b` per lane.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn sub(a: V, b: V) -> V {
    vsubq_f32(a, b)
}

/// `a · b` per lane (`fmul`: never fused with an add here).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn mul(a: V, b: V) -> V {
    vmulq_f32(a, b)
}

/// `a / b` per lane.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn div(a: V, b: V) -> V {
    vdivq_f32(a, b)
}

/// `√a` per lane (correctly rounded, as `sqrtf`).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn sqrt(a: V) -> V {
    vsqrtq_f32(a)
}

/// `a` with its sign bit flipped (NaNs included).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn neg(a: V) -> V {
    vnegq_f32(a)
}

/// `a` with its sign bit cleared.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn abs(a: V) -> V {
    vabsq_f32(a)
}

/// `⌊a⌋` per lane.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn floor(a: V) -> V {
    vrndmq_f32(a)
}

/// `a · b + c` per lane, rounded once (`fmla`).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn mul_add(a: V, b: V, c: V) -> V {
    vfmaq_f32(c, a, b)
}

/// Lanes where `a > b`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn gt(a: V, b: V) -> M {
    vcgtq_f32(a, b)
}

/// Lanes where `a < b`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn lt(a: V, b: V) -> M {
    vcltq_f32(a, b)
}

/// Lanes where `a ≥ b`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn ge(a: V, b: V) -> M {
    vcgeq_f32(a, b)
}

/// Lanes where `a ≤ b`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn le(a: V, b: V) -> M {
    vcleq_f32(a, b)
}

/// Lanes where `a = b`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn eq(a: V, b: V) -> M {
    vceqq_f32(a, b)
}

/// Lanes that are NaN (a NaN is unequal to itself).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn is_nan(a: V) -> M {
    vmvnq_u32(vceqq_f32(a, a))
}

/// Lanes set in `a` or `b`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn or(a: M, b: M) -> M {
    vorrq_u32(a, b)
}

/// Lanes set in `a` and `b`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn and(a: M, b: M) -> M {
    vandq_u32(a, b)
}

/// Lanes set in `a` and not in `b`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn and_not(a: M, b: M) -> M {
    vbicq_u32(a, b)
}

/// Whether every lane is set.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn all(m: M) -> bool {
    vminvq_u32(m) == u32::MAX
}

/// Which lanes are set.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn mask_lanes(m: M) -> [bool; LANES] {
    to_array(vreinterpretq_f32_u32(m)).map(|lane| lane.to_bits() != 0)
}

/// `a` in the lanes `m` sets, `b` elsewhere.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn select(m: M, a: V, b: V) -> V {
    vbslq_f32(m, a, b)
}

/// `v` with the lanes `m` sets made `+0`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn clear(m: M, v: V) -> V {
    vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(v), m))
}

/// The lanes' bits and `mask`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn bits_and(v: V, mask: u32) -> V {
    vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v), vdupq_n_u32(mask)))
}

/// Lanes whose bits and `mask` are zero.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn bits_zero(v: V, mask: u32) -> M {
    vceqq_u32(vandq_u32(vreinterpretq_u32_f32(v), vdupq_n_u32(mask)), vdupq_n_u32(0))
}

/// Per lane, whichever of `a` and `b` has the smaller bits as an unsigned integer.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn min_bits(a: V, b: V) -> V {
    vreinterpretq_f32_u32(vminq_u32(vreinterpretq_u32_f32(a), vreinterpretq_u32_f32(b)))
}

/// The lanes' bits plus `k` (wrapping).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn add_bits(v: V, k: i32) -> V {
    vreinterpretq_f32_s32(vaddq_s32(vreinterpretq_s32_f32(v), vdupq_n_s32(k)))
}

/// `2ⁿ` per lane for integral `n` in `[-127, 128]`: the bits `(int(n) + 127) << 23` (`int`
/// truncating; outside that range the bits are not a power of two, as in MLX's `exp`).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn two_to(n: V) -> V {
    let biased = vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127));
    vreinterpretq_f32_s32(vshlq_n_s32::<23>(biased))
}

/// [`bf16_from_f32`](crate::bf16_from_f32) of each lane, as the float32 of the bf16 result:
/// [`round_bf16_not_nan`], every NaN made `0x7FC0`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn round_bf16(v: V) -> V {
    select(is_nan(v), vreinterpretq_f32_u32(vdupq_n_u32(0x7FC0_0000)), round_bf16_not_nan(v))
}

/// [`round_bf16`](crate::gemm::arithmetic::round_bf16) of each lane: round to nearest even on
/// the upper 16 bits, the integer rule without the NaN test (a NaN whose low 16 bits are zero
/// comes back unchanged; the bf16 arithmetic only meets such NaNs).
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn round_bf16_not_nan(v: V) -> V {
    let u = vreinterpretq_u32_f32(v);
    let odd = vandq_u32(vshrq_n_u32::<16>(u), vdupq_n_u32(1));
    let rounded = vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7FFF)), odd);
    vreinterpretq_f32_u32(vandq_u32(rounded, vdupq_n_u32(0xFFFF_0000)))
}

/// The 4 float32 values at `p`.
///
/// # Safety
/// `p` is valid for reading 4 consecutive `f32`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) unsafe fn load_f32(p: *const f32) -> V {
    // SAFETY: the caller gives 4 readable values.
    unsafe { vld1q_f32(p) }
}

/// The 4 bf16 values at `p`, widened (exactly) to float32.
///
/// # Safety
/// `p` is valid for reading 4 consecutive `bf16`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) unsafe fn load_bf16(p: *const bf16) -> V {
    // SAFETY: the caller gives 4 readable values (8 bytes).
    let halves = unsafe { vld1_u16(p.cast::<u16>()) };
    vreinterpretq_f32_u32(vshll_n_u16::<16>(halves))
}

/// Stores the 4 lanes at `p` as float32.
///
/// # Safety
/// `p` is valid for writing 4 consecutive `f32`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) unsafe fn store_f32(p: *mut f32, v: V) {
    // SAFETY: the caller gives 4 writable values.
    unsafe { vst1q_f32(p, v) }
}

/// Stores the upper 16 bits of each lane at `p` as a bf16: the lanes' own bf16 values where
/// they are exact widenings of bf16 (NaN payloads kept); truncated otherwise.
///
/// # Safety
/// `p` is valid for writing 4 consecutive `bf16`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) unsafe fn store_bf16_exact(p: *mut bf16, v: V) {
    let bits = vshrn_n_u32::<16>(vreinterpretq_u32_f32(v));
    // SAFETY: the caller gives 4 writable values (8 bytes).
    unsafe { vst1_u16(p.cast::<u16>(), bits) }
}

/// The 4×4 transpose: lane `j` of `rows[i]` becomes lane `i` of the result's vector `j`.
#[inline]
#[target_feature(enable = "neon")]
pub(crate) fn transpose(rows: [V; LANES]) -> [V; LANES] {
    let [r0, r1, r2, r3] = rows;
    // (r0[0], r1[0], r0[2], r1[2]) and (r0[1], r1[1], r0[3], r1[3]); likewise for rows 2, 3.
    let (t0, t1) = (vtrn1q_f32(r0, r1), vtrn2q_f32(r0, r1));
    let (t2, t3) = (vtrn1q_f32(r2, r3), vtrn2q_f32(r2, r3));
    let pairs = |a: V| vreinterpretq_f64_f32(a);
    let back = |a: float64x2_t| vreinterpretq_f32_f64(a);
    [
        back(vtrn1q_f64(pairs(t0), pairs(t2))),
        back(vtrn1q_f64(pairs(t1), pairs(t3))),
        back(vtrn2q_f64(pairs(t0), pairs(t2))),
        back(vtrn2q_f64(pairs(t1), pairs(t3))),
    ]
}

super::derived!(Neon "neon");
