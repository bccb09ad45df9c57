//! The scalar twin of MLX's CPU matmul: three loops, one accumulator per output over k in
//! order. It defines the bits [`gemm`](super::gemm) reproduces; the fast paths are tested
//! against it.

use super::arithmetic::{BiasPlacement, MultiplyAdd, TargetMultiplyAdd, operand};
use super::{GemmOptions, MatRef, check_arguments};
use crate::elementwise::clip_scalar;
use crate::{Float, Result};

/// `out = a · b` with MLX 0.32's CPU bits for `O`'s dtype, computed the slow way: for each
/// output `(i, j)`, `acc = init; for k in 0..K { acc = acc + a[i,k]·b[k,j] }` in `f32`, each
/// step under the target's rule ([`TargetMultiplyAdd`]: the product rounded before the add on
/// x86-64, one fused multiply-add on aarch64), then the bias (after the sum or as `init`, see
/// [`gemm`](super::gemm)), the cast to `O` and the output clip. Same contract and errors as
/// [`gemm`](super::gemm).
pub fn reference<A: Float, B: Float, O: Float>(
    a: MatRef<'_, A>,
    b: MatRef<'_, B>,
    out: &mut [O],
    options: &GemmOptions<'_, O>,
) -> Result<()> {
    reference_with::<TargetMultiplyAdd, A, B, O>(a, b, out, options)
}

/// [`reference()`] with the float32 steps under rule `R` (the other target's, for tests).
pub fn reference_with<R: MultiplyAdd, A: Float, B: Float, O: Float>(
    a: MatRef<'_, A>,
    b: MatRef<'_, B>,
    out: &mut [O],
    options: &GemmOptions<'_, O>,
) -> Result<()> {
    let (m, k, n) = check_arguments(&a, &b, out, options)?;
    let placement = BiasPlacement::for_product::<O, B>(&b);
    for i in 0..m {
        for j in 0..n {
            let bias = options.bias.map(|bias| bias[j]);
            let value = if k == 0 {
                // MLX's empty product: the output is the addend copied (`addmm`) or zeros.
                bias.unwrap_or_default()
            } else {
                let mut acc = match (placement, bias) {
                    (BiasPlacement::BeforeSum, Some(c)) => c.to_f32(),
                    _ => 0.0f32,
                };
                for p in 0..k {
                    let x = operand::<A, O>(a.at(i, p), options.a_clip);
                    let y = operand::<B, O>(b.at(p, j), None);
                    acc = R::mul_add(x, y, acc);
                }
                match (placement, bias) {
                    (BiasPlacement::AfterSum, Some(c)) => O::from_f32(acc + c.to_f32()),
                    _ => O::from_f32(acc),
                }
            };
            out[i * n + j] = match options.out_clip {
                Some((lo, hi)) => clip_scalar(value, Some(lo), Some(hi)),
                None => value,
            };
        }
    }
    Ok(())
}
