//! [`Dequantized`]: a [`QuantizedMatrix`]'s `Wᵀ` (`K × N`) as the product's right operand,
//! dequantized into the micro-kernels' `f32` panels while it is packed (once per product, in
//! parallel over panels), so that the product is the crate's GEMM driver.
//!
//! Each packed value is what `_qmm_t` / `fp_qmm_t` multiply `x` by, in the product's dtype
//! `T`:
//! - affine: `scale * wl[p] + bias` in `T`, `scale` and `bias` cast to `T`, `q` the code: in
//!   bf16 `T(T(scale · q) + bias)`, in float32 one step under the target's
//!   [`MultiplyAdd`] rule ([`TargetMultiplyAdd`]: `scale · q` rounded first on x86-64, one
//!   `fmadd` on aarch64);
//! - mxfp4, nvfp4: `FP4_LUT[q]`; mxfp8: `FromFP8(q)` (each exact in `T`; a NaN becomes `T`'s);
//!   and, per column and group, the factor `dequantize_scale<T>(s)` ([`RightOperand::group`]).
//!
//! With AVX2 a full panel is decoded 8 columns at a time, with NEON 4 at a time: for each 8 k,
//! the word of each column's row that holds their codes, one per lane, then each k's codes
//! shifted out of them side by side, already in the panel's layout; the same values as the
//! scalar loop (NEON's affine float32 step is one `fmla`, aarch64's rule; E2M1's sixteen
//! values are looked up with a byte table lookup, `tbl`).

use super::format::{QuantizationMode, code};
use super::fp::{FP4_LUT, dequantize_scale, from_fp8};
use super::matrix::{QuantizedMatrix, Scales};
use crate::cpu::Isa;
use crate::gemm::arithmetic::multiply_add;
use crate::gemm::right_operand::RightOperand;
use crate::gemm::tile::NR;
use crate::gemm::{MultiplyAdd, TargetMultiplyAdd};
use crate::{ElementType, Float};
use std::marker::PhantomData;

/// k values decoded at a time by the scalar loop (keeps the destination chunk in L1).
const K_CHUNK: usize = 128;

/// `Wᵀ` of a quantized matrix, dequantized to `T` as it is packed.
pub(crate) struct Dequantized<'a, T> {
    w: QuantizedMatrix<'a>,
    /// The fp modes' weight of each code, in `T` (E2M1 in the first 16, or E4M3).
    fp_values: [f32; 256],
    dtype: PhantomData<fn() -> T>,
}

impl<'a, T: Float> Dequantized<'a, T> {
    pub(crate) fn new(w: QuantizedMatrix<'a>) -> Self {
        let fp_values = std::array::from_fn(|q| {
            let value = match w.quantization().mode() {
                QuantizationMode::Mxfp8 => from_fp8(q as u8),
                _ => FP4_LUT[q % 16],
            };
            T::from_f32(value).to_f32()
        });
        Dequantized { w, fp_values, dtype: PhantomData }
    }

    /// The values of column `n` of `Wᵀ` at k `k0..k0 + len`, into `out[(k − k0) · stride]`,
    /// float32's `scale · q + bias` under rule `R`.
    fn column<R: MultiplyAdd>(&self, n: usize, (k0, len): (usize, usize), out: &mut [f32], stride: usize) {
        let q = self.w.quantization();
        let (bits, group) = (q.bits(), q.group_size());
        let row = self.w.row(n);
        let groups = self.w.groups();
        let mut kk = k0;
        while kk < k0 + len {
            let g = kk / group;
            let end = ((g + 1) * group).min(k0 + len);
            match self.w.scales() {
                Scales::Affine { scales, biases } => {
                    let (scale, bias) = (scales.get::<T>(n * groups + g), biases.get::<T>(n * groups + g));
                    for i in kk..end {
                        let q = T::from_f32(code(row, i, bits) as f32);
                        out[(i - k0) * stride] = multiply_add::<T, R>(scale, q, bias).to_f32();
                    }
                }
                Scales::Fp(_) => {
                    for i in kk..end {
                        out[(i - k0) * stride] = self.fp_values[code(row, i, bits) as usize];
                    }
                }
            }
            kk = end;
        }
    }
}

impl<T: Float> RightOperand for Dequantized<'_, T> {
    fn pack_panel(&self, j0: usize, cols: usize, dst: &mut [f32], isa: Isa) {
        let k = self.w.k();
        if cols < NR {
            dst.fill(0.0);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = isa.avx2().filter(|_| cols == NR) {
            avx2::pack_panel(avx2, self, j0, &mut dst[..k * NR]);
            return;
        }
        #[cfg(target_arch = "aarch64")]
        if let Some(neon) = isa.neon().filter(|_| cols == NR) {
            neon::pack_panel(neon, self, j0, &mut dst[..k * NR]);
            return;
        }
        let _ = isa;
        for k0 in (0..k).step_by(K_CHUNK) {
            let len = K_CHUNK.min(k - k0);
            let chunk = &mut dst[k0 * NR..(k0 + len) * NR];
            for c in 0..cols {
                self.column::<TargetMultiplyAdd>(j0 + c, (k0, len), &mut chunk[c..], NR);
            }
        }
    }

    fn bf16_values(&self) -> bool {
        // E2M1 and E4M3 values are bf16 values; affine ones are when `T` is bf16.
        self.w.quantization().mode() != QuantizationMode::Affine || T::DTYPE == ElementType::Bf16
    }

    fn group(&self) -> Option<usize> {
        let q = self.w.quantization();
        (q.mode() != QuantizationMode::Affine).then_some(q.group_size())
    }

    fn pack_group_scales(&self, j0: usize, cols: usize, dst: &mut [f32]) {
        let (groups, group) = (self.w.groups(), self.w.quantization().group_size());
        let Scales::Fp(scales) = self.w.scales() else {
            dst.fill(0.0);
            return;
        };
        for (g, out) in dst.chunks_exact_mut(NR).enumerate() {
            for (c, d) in out.iter_mut().enumerate() {
                *d = if c < cols { dequantize_scale::<T>(scales[(j0 + c) * groups + g], group).to_f32() } else { 0.0 };
            }
        }
    }
}

/// The 4 bytes of `row` at `at` as a little-endian word, zeros past the row's end.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
fn word(row: &[u8], at: usize) -> u32 {
    match row.get(at..at + 4) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
        _ => {
            let mut bytes = [0u8; 4];
            for (i, byte) in bytes.iter_mut().enumerate() {
                *byte = row.get(at + i).copied().unwrap_or(0);
            }
            u32::from_le_bytes(bytes)
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::super::format::QuantizationMode;
    use super::super::matrix::Scales;
    use super::{Dequantized, NR, word};
    use crate::Float;
    use crate::simd::avx2::round;
    use std::arch::x86_64::*;

    /// One lane per row of `rows`: the word holding codes `k0..k0 + 4` of that row in its low
    /// `4 · bits` bits (`low`), and the one holding codes `k0 + 4..k0 + 8` (`high`); `k0` a
    /// multiple of 8, so the 8 codes are the `bits` bytes at `k0 / 8 · bits`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn words8(rows: &[&[u8]; 8], k0: usize, bits: usize) -> (__m256i, __m256i) {
        let at = k0 / 8 * bits;
        // Codes 4..8 start at bit `4 · bits`: byte `4 · bits / 8`, shifted by the rest.
        let (high_at, high_shift) = (at + 4 * bits / 8, (4 * bits % 8) as i32);
        let low = std::array::from_fn::<i32, 8, _>(|c| word(rows[c], at) as i32);
        let high = std::array::from_fn::<i32, 8, _>(|c| word(rows[c], high_at) as i32);
        let [l0, l1, l2, l3, l4, l5, l6, l7] = low;
        let [h0, h1, h2, h3, h4, h5, h6, h7] = high;
        let high = _mm256_srl_epi32(_mm256_setr_epi32(h0, h1, h2, h3, h4, h5, h6, h7), _mm_cvtsi32_si128(high_shift));
        (_mm256_setr_epi32(l0, l1, l2, l3, l4, l5, l6, l7), high)
    }

    /// Columns `j0..j0 + 8` of `Wᵀ`, all of k, into `dst` at column offset `c0` of each
    /// `NR`-wide panel row: for each k, the 8 columns' codes shifted out of their words side by
    /// side, already in the panel's layout.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn pack8<T: Float>(w: &Dequantized<'_, T>, j0: usize, dst: &mut [f32], c0: usize) {
        let matrix = &w.w;
        let q = matrix.quantization();
        let (bits, group, groups) = (q.bits(), q.group_size(), matrix.groups());
        let rows: [&[u8]; 8] = std::array::from_fn(|c| matrix.row(j0 + c));
        let mask = _mm256_set1_epi32(q.mask() as i32);
        // SAFETY: the table holds 256 floats.
        let (positive, negative) =
            unsafe { (_mm256_loadu_ps(w.fp_values.as_ptr()), _mm256_loadu_ps(w.fp_values.as_ptr().add(8))) };
        for g in 0..groups {
            let (scale, bias) = match matrix.scales() {
                Scales::Affine { scales, biases } => {
                    let at = |c: usize| (j0 + c) * groups + g;
                    let s: [f32; 8] = std::array::from_fn(|c| scales.get::<T>(at(c)).to_f32());
                    let b: [f32; 8] = std::array::from_fn(|c| biases.get::<T>(at(c)).to_f32());
                    // SAFETY: each array holds 8 floats.
                    unsafe { (_mm256_loadu_ps(s.as_ptr()), _mm256_loadu_ps(b.as_ptr())) }
                }
                Scales::Fp(_) => (_mm256_setzero_ps(), _mm256_setzero_ps()),
            };
            for k0 in (g * group..(g + 1) * group).step_by(8) {
                let (low, high) = words8(&rows, k0, bits);
                for i in 0..8 {
                    let shift = _mm_cvtsi32_si128((i % 4 * bits) as i32);
                    let codes = _mm256_and_si256(_mm256_srl_epi32(if i < 4 { low } else { high }, shift), mask);
                    let value = match q.mode() {
                        QuantizationMode::Affine => {
                            let scaled = round::<T>(_mm256_mul_ps(scale, _mm256_cvtepi32_ps(codes)));
                            round::<T>(_mm256_add_ps(scaled, bias))
                        }
                        // SAFETY: every code is below 256, the table's length.
                        QuantizationMode::Mxfp8 => unsafe { _mm256_i32gather_ps::<4>(w.fp_values.as_ptr(), codes) },
                        // E2M1: the low 3 bits pick one of 8 values, bit 3 the half of the table.
                        QuantizationMode::Mxfp4 | QuantizationMode::Nvfp4 => _mm256_blendv_ps(
                            _mm256_permutevar8x32_ps(positive, codes),
                            _mm256_permutevar8x32_ps(negative, codes),
                            _mm256_castsi256_ps(_mm256_slli_epi32::<28>(codes)),
                        ),
                    };
                    let out = &mut dst[(k0 + i) * NR + c0..(k0 + i) * NR + c0 + 8];
                    // SAFETY: `out` holds 8 floats.
                    unsafe { _mm256_storeu_ps(out.as_mut_ptr(), value) };
                }
            }
        }
    }

    crate::cpu::target_entry! {
        Avx2;
        /// [`pack_panel_tf`] behind the token that proves its target features.
        pub(super) fn pack_panel[T: Float](w: &Dequantized<'_, T>, j0: usize, dst: &mut [f32]) = pack_panel_tf;
    }

    /// A full panel: columns `j0..j0 + NR` of `Wᵀ`, all of k, into `dst` (`K · NR` values).
    #[target_feature(enable = "avx2,fma")]
    fn pack_panel_tf<T: Float>(w: &Dequantized<'_, T>, j0: usize, dst: &mut [f32]) {
        for half in 0..NR / 8 {
            pack8(w, j0 + half * 8, dst, half * 8);
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod neon {
    use super::super::format::QuantizationMode;
    use super::super::matrix::Scales;
    use super::{Dequantized, NR, word};
    use crate::simd::neon::round;
    use crate::{ElementType, Float};
    use std::arch::aarch64::*;

    /// One lane per row of `rows`: the word holding codes `k0..k0 + 4` of that row in its low
    /// `4 · bits` bits (`low`), and the one holding codes `k0 + 4..k0 + 8` (`high`); `k0` a
    /// multiple of 8, so the 8 codes are the `bits` bytes at `k0 / 8 · bits`.
    #[inline]
    #[target_feature(enable = "neon")]
    fn words4(rows: &[&[u8]; 4], k0: usize, bits: usize) -> (uint32x4_t, uint32x4_t) {
        let at = k0 / 8 * bits;
        // Codes 4..8 start at bit `4 · bits`: byte `4 · bits / 8`, shifted by the rest.
        let (high_at, high_shift) = (at + 4 * bits / 8, (4 * bits % 8) as i32);
        let low: [u32; 4] = std::array::from_fn(|c| word(rows[c], at));
        let high: [u32; 4] = std::array::from_fn(|c| word(rows[c], high_at));
        // SAFETY: each array holds 4 words.
        let (low, high) = unsafe { (vld1q_u32(low.as_ptr()), vld1q_u32(high.as_ptr())) };
        // (A negative count shifts right.)
        (low, vshlq_u32(high, vdupq_n_s32(-high_shift)))
    }

    /// Columns `j0..j0 + 4` of `Wᵀ`, all of k, into `dst` at column offset `c0` of each
    /// `NR`-wide panel row: for each k, the 4 columns' codes shifted out of their words side by
    /// side, already in the panel's layout.
    #[inline]
    #[target_feature(enable = "neon")]
    fn pack4<T: Float>(w: &Dequantized<'_, T>, j0: usize, dst: &mut [f32], c0: usize) {
        let matrix = &w.w;
        let q = matrix.quantization();
        let (bits, group, groups) = (q.bits(), q.group_size(), matrix.groups());
        let rows: [&[u8]; 4] = std::array::from_fn(|c| matrix.row(j0 + c));
        let mask = vdupq_n_u32(q.mask());
        // SAFETY: the table holds 256 floats: its first 16 are 64 bytes.
        let e2m1 = unsafe { vld1q_u8_x4(w.fp_values.as_ptr().cast::<u8>()) };
        for g in 0..groups {
            let (scale, bias) = match matrix.scales() {
                Scales::Affine { scales, biases } => {
                    let at = |c: usize| (j0 + c) * groups + g;
                    let s: [f32; 4] = std::array::from_fn(|c| scales.get::<T>(at(c)).to_f32());
                    let b: [f32; 4] = std::array::from_fn(|c| biases.get::<T>(at(c)).to_f32());
                    // SAFETY: each array holds 4 floats.
                    unsafe { (vld1q_f32(s.as_ptr()), vld1q_f32(b.as_ptr())) }
                }
                Scales::Fp(_) => (vdupq_n_f32(0.0), vdupq_n_f32(0.0)),
            };
            for k0 in (g * group..(g + 1) * group).step_by(8) {
                let (low, high) = words4(&rows, k0, bits);
                for i in 0..8 {
                    let shift = vdupq_n_s32(-((i % 4 * bits) as i32));
                    let codes = vandq_u32(vshlq_u32(if i < 4 { low } else { high }, shift), mask);
                    let value = match q.mode() {
                        QuantizationMode::Affine => {
                            let code = vcvtq_f32_u32(codes);
                            match T::DTYPE {
                                // `bias + scale · q` rounded once (aarch64's rule).
                                ElementType::F32 => vfmaq_f32(bias, scale, code),
                                ElementType::Bf16 => round::<T>(vaddq_f32(round::<T>(vmulq_f32(scale, code)), bias)),
                            }
                        }
                        QuantizationMode::Mxfp8 => {
                            let mut lanes = [0u32; 4];
                            // SAFETY: `lanes` holds 4 words.
                            unsafe { vst1q_u32(lanes.as_mut_ptr(), codes) };
                            let values = lanes.map(|code| w.fp_values[code as usize]);
                            // SAFETY: `values` holds 4 floats.
                            unsafe { vld1q_f32(values.as_ptr()) }
                        }
                        // E2M1: the bytes `4 · code .. 4 · code + 4` of the first 16 values.
                        QuantizationMode::Mxfp4 | QuantizationMode::Nvfp4 => {
                            let bytes = vmlaq_n_u32(vdupq_n_u32(0x0302_0100), codes, 0x0404_0404);
                            vreinterpretq_f32_u8(vqtbl4q_u8(e2m1, vreinterpretq_u8_u32(bytes)))
                        }
                    };
                    let out = &mut dst[(k0 + i) * NR + c0..(k0 + i) * NR + c0 + 4];
                    // SAFETY: `out` holds 4 floats.
                    unsafe { vst1q_f32(out.as_mut_ptr(), value) };
                }
            }
        }
    }

    crate::cpu::target_entry! {
        Neon;
        /// [`pack_panel_tf`] behind the token that proves its target features.
        pub(super) fn pack_panel[T: Float](w: &Dequantized<'_, T>, j0: usize, dst: &mut [f32]) = pack_panel_tf;
    }

    /// A full panel: columns `j0..j0 + NR` of `Wᵀ`, all of k, into `dst` (`K · NR` values).
    #[target_feature(enable = "neon")]
    fn pack_panel_tf<T: Float>(w: &Dequantized<'_, T>, j0: usize, dst: &mut [f32]) {
        for quarter in 0..NR / 4 {
            pack4(w, j0 + quarter * 4, dst, quarter * 4);
        }
    }
}
