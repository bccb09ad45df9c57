//! MLX 0.32's CPU `quantized_matmul(x, w, scales, biases, transpose=True)` with its bits, for
//! float32 and bf16: `x [M, K]` times `Wᵀ`, `W` an `[N, K]` matrix quantized as MLX packs it
//! (affine with 1–8 bits, mxfp4, nvfp4, mxfp8), with `nn.QuantizedLinear`'s separate `+ bias`
//! and the clips of gemma4's `ClippableLinear` fused in.
//!
//! What MLX computes, per output `(m, n)`, in the product's dtype `T` (every operation on `T`
//! rounds to `T`; float32 has no FMA):
//! - affine (`_qmm_t`): `sum = 0; for k in order: sum += x[m,k] · (scale · q + bias)`, the
//!   group's scale and bias, `q` the code;
//! - mxfp4, nvfp4, mxfp8 (`fp_qmm_t`): per group `gsum = 0; gsum += x[m,k] · w[k]` (`w` the
//!   E2M1 or E4M3 value), then `sum += scale · gsum`.
//!
//! So affine is an ordinary product with `W` dequantized (`T(T(scale · q) + bias)`): in float32
//! the crate's float32 GEMM, in bf16 one whose every product and sum rounds to bf16; the fp
//! modes are products whose k-sum restarts every group. All run on the crate's GEMM driver
//! ([`gemm`](crate::gemm)): `W` is dequantized into the packed panels as it is packed
//! (`dequantize`), the micro-kernel is the float32 one or the bf16-arithmetic one, and a
//! grouped k-sum combines each group into the accumulator.
//!
//! The packed layout: `W` is uint32 `[N, K · bits / 32]`, each row a little-endian bitstream of
//! `bits`-bit codes (`format`); the scales (and affine biases) are `[N, K / group]`.
//!
//! - `format`: [`QuantizationMode`], [`Quantization`], the packed layout and its codes.
//! - `fp`: the fp modes' number formats ([`from_fp8`], [`FP4_LUT`], [`dequantize_scale`]).
//! - `matrix`: [`QuantizedMatrix`], the checked view of MLX's buffers.
//! - [`reference`](reference()): the scalar twin (`_qmm_t`, `fp_qmm_t` as written).
//! - `dequantize`: the packing of `W` into the driver's panels.

mod dequantize;
mod format;
mod fp;
mod matrix;
mod reference;
#[cfg(test)]
mod tests;

pub use format::{Quantization, QuantizationMode};
pub use fp::{FP4_LUT, dequantize_scale, from_fp8};
pub use matrix::{FloatSlice, QuantizedMatrix, Scales};
pub use reference::{reference, reference_with};

use crate::elementwise::clip_scalar;
use crate::gemm::arithmetic::{Arithmetic, BiasPlacement};
use crate::gemm::driver::{self, Product};
use crate::gemm::epilogue::Epilogue;
use crate::gemm::tile::{MR, NR};
use crate::gemm::{Blocking, GemmOptions, MatRef, MicroKernel};
use crate::{ElementType, Error, Float, Result};
use dequantize::Dequantized;

/// `out [M, N]` (row-major) `= x [M, K] · Wᵀ` with the bits of MLX 0.32's CPU
/// `quantized_matmul(x, w, scales, biases, transpose=True)` on the stock wheel, `O` the
/// product's dtype, then the [`GemmOptions`] as MLX's separate ops compute them:
///
/// - `O` is the dtype MLX computes in and returns ([`QuantizedMatrix::product_dtype`]): for
///   affine, the promotion of `x`'s dtype (after the input clip) and the scales'; for the fp
///   modes, `x`'s. The caller picks it; `x` (after the clip), the scales and the biases are cast
///   to `O` as the op casts them.
/// - [`GemmOptions::a_clip`]: MLX's `clip` of `x` before the product, on `x`'s values widened
///   to float32 (bf16 or float32 bounds, as for [`gemm`](crate::gemm::gemm)).
/// - [`GemmOptions::bias`]: `nn.QuantizedLinear`'s `y + bias`, an element-wise add in `O` after
///   the product (one rounding; not `addmm`'s placement).
/// - [`GemmOptions::out_clip`]: MLX's `clip` of the result, in `O`.
/// - `K = 0`: `0 + bias` (so a `−0` bias gives `+0`), then the clip.
///
/// A float32 result that is NaN may differ from MLX's in its NaN payload or sign; bf16 NaNs are
/// always `0x7FC0`. Runs over all cores; the bits do not depend on the number of threads or
/// the blocking.
pub fn quantized_matmul<X: Float, O: Float>(
    x: MatRef<'_, X>,
    w: &QuantizedMatrix<'_>,
    out: &mut [O],
    options: &GemmOptions<'_, O>,
) -> Result<()> {
    let blocking = Blocking::for_shape(x.rows(), x.cols(), w.n());
    quantized_matmul_with(MicroKernel::detect(), blocking, x, w, out, options)
}

/// [`quantized_matmul`] with a chosen micro-kernel and blocking (for tests and benchmarks:
/// every choice gives the same bits).
pub fn quantized_matmul_with<X: Float, O: Float>(
    kernel: MicroKernel,
    blocking: Blocking,
    x: MatRef<'_, X>,
    w: &QuantizedMatrix<'_>,
    out: &mut [O],
    options: &GemmOptions<'_, O>,
) -> Result<()> {
    let (m, k, n) = check_arguments(&x, w, out, options)?;
    if k == 0 {
        for row in out.chunks_exact_mut(n.max(1)) {
            for (j, y) in row.iter_mut().enumerate() {
                *y = finish(O::default(), j, options);
            }
        }
        return Ok(());
    }
    let right = Dequantized::<O>::new(*w);
    let epilogue = Epilogue {
        bias: options.bias,
        // `y + bias` after the product: the accumulator holds `y` exactly (an `O` value).
        placement: BiasPlacement::AfterSum,
        out_clip: options.out_clip,
        isa: kernel.isa(),
    };
    let arithmetic = match O::DTYPE {
        ElementType::F32 => Arithmetic::F32,
        ElementType::Bf16 => Arithmetic::Bf16,
    };
    let product = Product { a: x, a_clip: options.a_clip, b: &right, arithmetic, epilogue };
    driver::run(kernel, blocking, (m, k, n), &product, out);
    Ok(())
}

/// The checks of every entry point: `x` is `[M, K]` for `W`'s `K`, `out` holds `M · N`, the
/// bias `N`. Returns `(M, K, N)`.
pub(crate) fn check_arguments<X: Float, O: Float>(
    x: &MatRef<'_, X>,
    w: &QuantizedMatrix<'_>,
    out: &[O],
    options: &GemmOptions<'_, O>,
) -> Result<(usize, usize, usize)> {
    let fail = |what: String| Err(Error::shape("quantized_matmul", what));
    let (m, k, n) = (x.rows(), w.k(), w.n());
    if x.cols() != k {
        return fail(format!("x is {m} × {} but W is {n} × {k}", x.cols()));
    }
    // The packed panels hold up to M × K and K × N values.
    let padded = |len: usize, tile: usize| len.checked_next_multiple_of(tile).and_then(|len| len.checked_mul(k));
    let Some(len) = m.checked_mul(n).filter(|_| padded(m, MR).is_some() && padded(n, NR).is_some()) else {
        return fail(format!("{m} × {k} by {k} × {n} overflows"));
    };
    if out.len() != len {
        return fail(format!("out holds {} elements, {m} × {n} needs {len}", out.len()));
    }
    if let Some(bias) = options.bias
        && bias.len() != n
    {
        return fail(format!("bias holds {} elements, N is {n}", bias.len()));
    }
    Ok((m, k, n))
}

/// Output `y` of column `j` after the options: `y + bias[j]` in `O`, then the clip.
#[inline]
pub(crate) fn finish<O: Float>(y: O, j: usize, options: &GemmOptions<'_, O>) -> O {
    let y = match options.bias {
        Some(bias) => O::from_f32(y.to_f32() + bias[j].to_f32()),
        None => y,
    };
    match options.out_clip {
        Some((lo, hi)) => clip_scalar(y, Some(lo), Some(hi)),
        None => y,
    }
}
