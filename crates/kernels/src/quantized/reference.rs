//! The scalar twin of MLX 0.32's CPU `quantized_matmul` with `transpose=true`: `_qmm_t<T,
//! bits, group_size>` (affine) and `fp_qmm_t<T, group_size, bits>` (mxfp4, nvfp4, mxfp8) of
//! `backend/cpu/quantized.cpp`, written as the C++ is, in `T`'s arithmetic. It defines the
//! bits [`quantized_matmul`](super::quantized_matmul) reproduces; the fast paths are tested
//! against it.
//!
//! On x86 MLX's `simd::max_size<T>` is 1, so the `_simd` variants never run; `T` is the
//! product's dtype `O`. Every operation on `T` computes in float and rounds to `T` (the
//! identity for float32, [`bf16_from_f32`](crate::bf16_from_f32) for bf16, as `bfloat16_t`'s
//! operators do). In float32, `sum + x·w`, `scale·q + bias`, `gsum + x·w` and `sum + scale·gsum`
//! are each one step under the target's [`MultiplyAdd`] rule ([`TargetMultiplyAdd`]): the x86-64
//! wheel's compiler contracts none, the aarch64 one makes each an `fmadd`.

use super::format::extract_bits;
use super::fp::{FP4_LUT, dequantize_scale, from_fp8};
use super::matrix::{QuantizedMatrix, Scales};
use super::{check_arguments, finish};
use crate::gemm::arithmetic::{multiply_add, operand};
use crate::gemm::{GemmOptions, MatRef, MultiplyAdd, TargetMultiplyAdd};
use crate::{Float, Result};

/// `out [M, N] = x [M, K] · Wᵀ` with MLX 0.32's CPU bits, computed the slow way, then the
/// fused options. Same contract and errors as [`quantized_matmul`](super::quantized_matmul).
pub fn reference<X: Float, O: Float>(
    x: MatRef<'_, X>,
    w: &QuantizedMatrix<'_>,
    out: &mut [O],
    options: &GemmOptions<'_, O>,
) -> Result<()> {
    reference_with::<TargetMultiplyAdd, X, O>(x, w, out, options)
}

/// [`reference()`] with the float32 steps under rule `R` (the other target's, for tests).
pub fn reference_with<R: MultiplyAdd, X: Float, O: Float>(
    x: MatRef<'_, X>,
    w: &QuantizedMatrix<'_>,
    out: &mut [O],
    options: &GemmOptions<'_, O>,
) -> Result<()> {
    let (m, k, n) = check_arguments(&x, w, out, options)?;
    // The op's cast of `x` (after the caller's clip) to the product's dtype.
    let x: Vec<O> = (0..m)
        .flat_map(|i| (0..k).map(move |p| (i, p)))
        .map(|(i, p)| O::from_f32(operand::<X, O>(x.at(i, p), options.a_clip)))
        .collect();
    match w.scales() {
        Scales::Affine { scales, biases } => {
            let scales: Vec<O> = (0..scales.len()).map(|i| scales.get(i)).collect();
            let biases: Vec<O> = (0..biases.len()).map(|i| biases.get(i)).collect();
            qmm_t::<R, O>(out, &x, w, &scales, &biases, (m, n, k));
        }
        Scales::Fp(scales) => fp_qmm_t::<R, O>(out, &x, w, scales, (m, n, k)),
    }
    for row in out.chunks_exact_mut(n.max(1)) {
        for (j, y) in row.iter_mut().enumerate() {
            *y = finish(*y, j, options);
        }
    }
    Ok(())
}

/// `_qmm_t<T, bits, group_size>(result, x, w, scales, biases, M, N, K)`.
fn qmm_t<R: MultiplyAdd, T: Float>(
    result: &mut [T],
    x: &[T],
    w: &QuantizedMatrix<'_>,
    scales: &[T],
    biases: &[T],
    (m, n, k): (usize, usize, usize),
) {
    let q = w.quantization();
    let (bits, group_size) = (q.bits(), q.group_size());
    let bitmask = q.mask();
    let pack_factor = q.pack_factor();
    let bytes_per_pack = q.bytes_per_pack();
    let packs_in_group = group_size / pack_factor;
    let w = w.bytes();
    let mut result = result.iter_mut();
    for m in 0..m {
        let mut w_local = 0;
        let mut scales_local = 0;
        for _n in 0..n {
            let mut x_local = m * k;
            let mut sum = T::from_f32(0.0);
            for _k in (0..k).step_by(group_size) {
                let scale = scales[scales_local];
                let bias = biases[scales_local];
                scales_local += 1;
                for _kw in 0..packs_in_group {
                    if matches!(bits, 3 | 5 | 6) {
                        let mut wl = [0u32; 8];
                        extract_bits(bits, &w[w_local..], &mut wl);
                        for &wl in &wl[..pack_factor] {
                            let wl = T::from_f32(wl as f32);
                            sum = multiply_add::<T, R>(x[x_local], multiply_add::<T, R>(scale, wl, bias), sum);
                            x_local += 1;
                        }
                        w_local += bytes_per_pack;
                    } else {
                        let mut wi = u32::from(w[w_local]);
                        w_local += 1;
                        for _p in 0..pack_factor {
                            let q = T::from_f32((wi & bitmask) as f32);
                            sum = multiply_add::<T, R>(x[x_local], multiply_add::<T, R>(scale, q, bias), sum);
                            x_local += 1;
                            if bits != 8 {
                                wi >>= bits;
                            }
                        }
                    }
                }
            }
            if let Some(out) = result.next() {
                *out = sum;
            }
        }
    }
}

/// `fp_qmm_t<T, group_size, bits>(result, x, w, scales, M, N, K)`.
fn fp_qmm_t<R: MultiplyAdd, T: Float>(
    result: &mut [T],
    x: &[T],
    w: &QuantizedMatrix<'_>,
    scales: &[u8],
    (m, n, k): (usize, usize, usize),
) {
    let q = w.quantization();
    let (bits, group_size) = (q.bits(), q.group_size());
    let pack_factor = 8 / bits;
    let packs_in_group = group_size / pack_factor;
    let w = w.bytes();
    let mut result = result.iter_mut();
    for m in 0..m {
        let mut w_local = 0;
        let mut scales_local = 0;
        for _n in 0..n {
            let mut x_local = m * k;
            let mut sum = T::from_f32(0.0);
            for _k in (0..k).step_by(group_size) {
                let scale = dequantize_scale::<T>(scales[scales_local], group_size);
                scales_local += 1;
                let mut gsum = T::from_f32(0.0);
                for _kw in 0..packs_in_group {
                    if bits == 4 {
                        gsum =
                            multiply_add::<T, R>(x[x_local], T::from_f32(FP4_LUT[usize::from(w[w_local] & 0xf)]), gsum);
                        x_local += 1;
                        gsum = multiply_add::<T, R>(
                            x[x_local],
                            T::from_f32(FP4_LUT[usize::from((w[w_local] >> 4) & 0xf)]),
                            gsum,
                        );
                        x_local += 1;
                    } else {
                        gsum = multiply_add::<T, R>(x[x_local], T::from_f32(from_fp8(w[w_local])), gsum);
                        x_local += 1;
                    }
                    w_local += 1;
                }
                sum = multiply_add::<T, R>(scale, gsum, sum);
            }
            if let Some(out) = result.next() {
                *out = sum;
            }
        }
    }
}
