//! Matrix products with MLX 0.32's CPU bits: `matmul` and `addmm` (α = β = 1) for float32 (the
//! reference BLAS the stock wheel bundles: a sequential k-sum, each step under the target's
//! [`MultiplyAdd`] rule, [`TargetMultiplyAdd`]: the product rounded before it is added on
//! x86-64, one fused multiply-add on aarch64) and bf16 (`gemms/simd_gemm.h`: the same sum in
//! an `f32` accumulator, rounded to bf16 once), with MLX's `clip` of the left operand and of the output fused in.
//!
//! One accumulator per output runs over k in order, one multiply-add per step, so one
//! register-tiled micro-kernel serves both dtypes and only the final store differs. The kernel
//! vectorises across the outputs of a tile, never along k; between k blocks the accumulators
//! pass through an `f32` buffer, which changes no bit. Where both operands hold bf16 values
//! whose products are all exact in `f32`, an FMA gives the same bits with fewer instructions,
//! and the AVX2 and AVX-512 kernels use one (checked per block of the product, `magnitudes`).
//! The AVX-512 kernel computes two tiles that share a panel of `b` at once.
//!
//! The driver also serves [`quantized`](crate::quantized): a right operand dequantized while
//! it is packed (`right_operand`), a k-sum in bf16 arithmetic (the micro-kernels' bf16 tiles:
//! every product and sum rounded to bf16), and k-sums in groups (`groups`).
//!
//! - `matrix`: [`MatRef`], strided views and MLX's classification of them.
//! - `arithmetic`: the shared scalar rules (clip, casts, where the bias goes, the arithmetic of
//!   the k-sum, the target's [`MultiplyAdd`]).
//! - [`reference`](reference()): the scalar twin that defines the bits.
//! - `tile`, `right_operand`, `pack`, `microkernel` (its tiles one file per instruction set:
//!   `microkernel/portable.rs`, `avx2.rs`, `avx512.rs`, `neon.rs`), `magnitudes`, `groups`,
//!   `epilogue`, `driver`, `scratch`: the fast path (the register tile, the right operand,
//!   packing to `f32` panels, the micro-kernels, when FMA is exact, grouped k-sums, the store,
//!   the cache blocking and threads, the reused packing buffers).

pub(crate) mod arithmetic;
pub(crate) mod driver;
pub(crate) mod epilogue;
mod groups;
pub(crate) mod magnitudes;
mod matrix;
pub(crate) mod microkernel;
pub(crate) mod pack;
mod reference;
pub(crate) mod right_operand;
pub(crate) mod scratch;
#[cfg(test)]
mod tests;
pub(crate) mod tile;

pub use arithmetic::{Fused, MultiplyAdd, Separate, TargetMultiplyAdd};
pub use driver::Blocking;
pub use matrix::{MatRef, MlxLayout};
pub use microkernel::MicroKernel;
pub use reference::{reference, reference_with};

use arithmetic::{Arithmetic, BiasPlacement};
use driver::Product;
use epilogue::Epilogue;
use right_operand::Dense;

use crate::{Error, Float, Result};

/// What [`gemm`] fuses around the product, each as MLX computes it.
#[derive(Debug, Clone, Copy)]
pub struct GemmOptions<'a, O> {
    /// Clamp every element of `a` to `[lo, hi]` as MLX's `clip` does (`maximum` then
    /// `minimum`, a NaN element kept, a NaN bound taken) before the product, on `a`'s values
    /// widened to float32: bf16 bounds for MLX's clip of a bf16 `a` by bf16 scalars, float32
    /// ones for its clip by float32 arrays (which makes the clipped `a` float32).
    pub a_clip: Option<(f32, f32)>,
    /// MLX `addmm(bias, a, b)` with α = β = 1 (a biased `nn.Linear`, `b` = Wᵀ): the addend of
    /// each output row, `[N]`, in the output dtype. Where it enters the sum is MLX's (see
    /// [`gemm`]).
    pub bias: Option<&'a [O]>,
    /// MLX `clip` of each stored output, in the output dtype.
    pub out_clip: Option<(O, O)>,
}

impl<O> Default for GemmOptions<'_, O> {
    fn default() -> Self {
        GemmOptions { a_clip: None, bias: None, out_clip: None }
    }
}

/// `out [M, N]` (row-major) `= a [M, K] · b [K, N]` with the bits of MLX 0.32's CPU `matmul`
/// (or `addmm` with [`GemmOptions::bias`]) on the stock wheel, for `O`'s dtype:
///
/// - Both operands are first cast to `O` (MLX casts matmul operands to the result dtype:
///   bf16 → f32 is exact; f32 → bf16 rounds), after `a`'s clip.
/// - Each output: `acc = 0; for k in 0..K { acc = acc + a[i,k]·b[k,j] }` in `f32`, each step
///   under [`TargetMultiplyAdd`] (`acc + round(a·b)` on x86-64, `fma(a, b, acc)` on aarch64).
/// - bf16 output: `bf16(acc)`, or `bf16(acc + bias[j])` (`simd_gemm`'s `alpha·acc + beta·c`).
/// - float32 output (the reference BLAS through `cblas_sgemm`): `acc`; with a bias,
///   `acc + bias[j]` after the full sum when `b` is column-contiguous (`W.T` of a row-major
///   `W`: the BLAS's dot-product loop), but with the accumulator *starting* at `bias[j]` when
///   `b` is row-contiguous or strided (its axpy loop accumulates into the output). See
///   [`MatRef::mlx_layout`].
/// - `K = 0`: zeros, or the bias copied (MLX fills the output with the addend).
/// - Then [`GemmOptions::out_clip`].
///
/// A float32 result that is NaN may differ from MLX's in its NaN payload or sign (x86 keeps
/// the payload of whichever NaN operand comes first); bf16 NaNs are always `0x7FC0`.
///
/// Runs over all cores; the bits do not depend on the number of threads or the blocking.
pub fn gemm<A: Float, B: Float, O: Float>(
    a: MatRef<'_, A>,
    b: MatRef<'_, B>,
    out: &mut [O],
    options: &GemmOptions<'_, O>,
) -> Result<()> {
    gemm_with(MicroKernel::detect(), Blocking::for_shape(a.rows(), a.cols(), b.cols()), a, b, out, options)
}

/// [`gemm`] with a chosen micro-kernel and blocking (for tests and benchmarks: every choice
/// gives the same bits).
pub fn gemm_with<A: Float, B: Float, O: Float>(
    kernel: MicroKernel,
    blocking: Blocking,
    a: MatRef<'_, A>,
    b: MatRef<'_, B>,
    out: &mut [O],
    options: &GemmOptions<'_, O>,
) -> Result<()> {
    let extents = check_arguments(&a, &b, out, options)?;
    let epilogue = Epilogue {
        bias: options.bias,
        placement: BiasPlacement::for_product::<O, B>(&b),
        out_clip: options.out_clip,
        isa: kernel.isa(),
    };
    let right = Dense::<B, O>::new(b);
    let product = Product { a, a_clip: options.a_clip, b: &right, arithmetic: Arithmetic::F32, epilogue };
    driver::run(kernel, blocking, extents, &product, out);
    Ok(())
}

/// The checks shared by every entry point: inner dimensions agree, `out` holds `M · N`, the
/// bias holds `N`. Returns the product's extents `(M, K, N)`.
pub(crate) fn check_arguments<A: Float, B: Float, O: Float>(
    a: &MatRef<'_, A>,
    b: &MatRef<'_, B>,
    out: &[O],
    options: &GemmOptions<'_, O>,
) -> Result<(usize, usize, usize)> {
    if a.cols() != b.rows() {
        return Err(Error::shape(
            "gemm",
            format!("a is {} × {} but b is {} × {}", a.rows(), a.cols(), b.rows(), b.cols()),
        ));
    }
    let len = a.rows().checked_mul(b.cols()).ok_or_else(|| Error::shape("gemm", "M × N overflows"))?;
    // The packed panels hold up to M × K and K × N values (views with zero strides may be
    // far larger than their slices).
    let padded_n = b.cols().checked_next_multiple_of(tile::NR);
    let padded_m = a.rows().checked_next_multiple_of(tile::MR);
    if padded_n.and_then(|n| n.checked_mul(a.cols())).and(padded_m.and_then(|m| m.checked_mul(a.cols()))).is_none() {
        return Err(Error::shape(
            "gemm",
            format!("{} × {} by {} × {} overflows", a.rows(), a.cols(), b.rows(), b.cols()),
        ));
    }
    if out.len() != len {
        return Err(Error::shape(
            "gemm",
            format!("out holds {} elements, {} × {} needs {len}", out.len(), a.rows(), b.cols()),
        ));
    }
    if let Some(bias) = options.bias
        && bias.len() != b.cols()
    {
        return Err(Error::shape("gemm", format!("bias holds {} elements, N is {}", bias.len(), b.cols())));
    }
    Ok((a.rows(), a.cols(), b.cols()))
}
