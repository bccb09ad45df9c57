//! `mx.fast.layer_norm` as MLX 0.32 computes it on the CPU (its fallback op sequence).
//!
//! The CPU has no fused layer-norm kernel: `fast::layer_norm` runs its fallback, per row of
//! `D`:
//!
//! ```text
//! f  = x.astype(float32)
//! mu = mean(f, -1)                   // Σ f in index order from 0, then · float32(1/D)
//! xc = f - mu
//! v  = mean(square(xc), -1)          // Σ xc·xc in index order, · float32(1/D)
//! y  = (xc * rsqrt(v + eps)).astype(T)   // rsqrt = 1.0f / sqrtf; T below
//! y  = y * weight                    // in T; only with a weight
//! y  = y + bias                      // in T; only with a bias
//! ```
//!
//! [`layer_norm_scalar`] is that sequence element by element (the definition of the bits);
//! [`layer_norm`] gives the same bits over all cores, 8 rows per AVX2 vector (4 per NEON
//! vector) where available: each row's sums stay in one lane, in index order.

use crate::cpu::Isa;
use crate::{Float, Result, parallel, rows};

const KERNEL: &str = "layer_norm";

/// `fast.layer_norm(x, weight, bias, eps)` over rows of `dim`: `x` `[rows, dim]` of any
/// [`Float`], `weight` and `bias` `[dim]` already in the output dtype `T`, `out` `[rows, dim]`
/// in `T`. MLX's `T` is `result_type(x, weight, bias)` with a weight and `x`'s dtype without
/// one (a bias alone is cast to it); gemma4's unified embedder: float32 `x`, bf16 parameters,
/// `T = f32`, eps 1e-5. MLX 0.32's CPU bits, infinities
/// included; a NaN gives NaN where MLX does (bf16 `0x7FC0`; in float32 a row with NaNs of
/// several payloads may carry either, as in MLX).
///
/// Fails with [`Error::Shape`](crate::Error::Shape) if `dim` is 0, `out` and `x` differ in
/// length, `dim` does not divide it, or a parameter does not have `dim` values.
pub fn layer_norm<X: Float, T: Float>(
    x: &[X],
    weight: Option<&[T]>,
    bias: Option<&[T]>,
    eps: f32,
    dim: usize,
    out: &mut [T],
) -> Result<()> {
    check(x, weight, bias, dim, out)?;
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(out, dim, rows::min_rows(dim), |first, out| {
        let start = first * dim;
        rows_block(isa, &x[start..start + out.len()], weight, bias, eps, dim, out);
    });
    Ok(())
}

/// [`layer_norm`] computed as MLX's op sequence reads, one element at a time on this thread:
/// the definition of the bits. Same arguments and errors.
pub fn layer_norm_scalar<X: Float, T: Float>(
    x: &[X],
    weight: Option<&[T]>,
    bias: Option<&[T]>,
    eps: f32,
    dim: usize,
    out: &mut [T],
) -> Result<()> {
    check(x, weight, bias, dim, out)?;
    rows_portable(x, weight, bias, eps, dim, out);
    Ok(())
}

fn check<X, T>(x: &[X], weight: Option<&[T]>, bias: Option<&[T]>, dim: usize, out: &[T]) -> Result<()> {
    rows::rows(KERNEL, x.len(), out.len(), dim)?;
    rows::parameter(KERNEL, "weight", weight.map(<[T]>::len), dim)?;
    rows::parameter(KERNEL, "bias", bias.map(<[T]>::len), dim)
}

/// Whole rows of `x` and `out` (checked), by the fastest path the CPU has.
fn rows_block<X: Float, T: Float>(
    isa: Isa,
    x: &[X],
    weight: Option<&[T]>,
    bias: Option<&[T]>,
    eps: f32,
    dim: usize,
    out: &mut [T],
) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = isa.avx2() {
        avx2::rows(avx2, x, weight, bias, eps, dim, out);
        return;
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(neon) = isa.neon() {
        neon::rows(neon, x, weight, bias, eps, dim, out);
        return;
    }
    let _ = isa;
    rows_portable(x, weight, bias, eps, dim, out);
}

/// Row by row, element by element: the op sequence.
fn rows_portable<X: Float, T: Float>(
    x: &[X],
    weight: Option<&[T]>,
    bias: Option<&[T]>,
    eps: f32,
    dim: usize,
    out: &mut [T],
) {
    let inverse_dim = rows::inverse_count(dim);
    for (x, out) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
        let mut sum = 0f32;
        for v in x {
            sum += v.to_f32();
        }
        let mean = sum * inverse_dim;
        let mut squares = 0f32;
        for v in x {
            let centred = v.to_f32() - mean;
            squares += centred * centred;
        }
        let r = 1.0 / (squares * inverse_dim + eps).sqrt();
        for (i, (o, v)) in out.iter_mut().zip(x).enumerate() {
            *o = affine(v.to_f32() - mean, r, weight.map(|w| w[i]), bias.map(|b| b[i]));
        }
    }
}

/// One output: `T(xc · r)`, then `T(· × w)` with a weight, then `T(· + b)` with a bias.
#[inline(always)]
fn affine<T: Float>(centred: f32, r: f32, weight: Option<T>, bias: Option<T>) -> T {
    let mut y = T::from_f32(centred * r);
    if let Some(w) = weight {
        y = T::from_f32(y.to_f32() * w.to_f32());
    }
    if let Some(b) = bias {
        y = T::from_f32(y.to_f32() + b.to_f32());
    }
    y
}

crate::simd::stamp! {
    lanes v for Avx2, Neon;

    /// Groups of `LANES` rows: the sums, then the sums of centred squares, in one vector each
    /// (a row per lane), then each row normalised `LANES` columns at a time.
    entry fn rows[X: Float, T: Float](
        x: &[X],
        weight: Option<&[T]>,
        bias: Option<&[T]>,
        eps: f32,
        dim: usize,
        out: &mut [T],
    ) {
        let count = x.len() / dim;
        let inverse_dim = v::splat(rows::inverse_count(dim));
        for first in (0..count).step_by(v::LANES) {
            let pointers = crate::simd::row_pointers(x, dim, first);
            // SAFETY: each pointer starts a row of `dim` values of `x`.
            let mean = v::mul(unsafe { v::row_sums(&pointers, dim, |f| f) }, inverse_dim);
            // SAFETY: as above.
            let squares = unsafe {
                v::row_sums(&pointers, dim, |f| {
                    let centred = v::sub(f, mean);
                    v::mul(centred, centred)
                })
            };
            let variance = v::mul(squares, inverse_dim);
            let r = v::div(v::splat(1.0), v::sqrt(v::add(variance, v::splat(eps))));
            for ((row, r), mean) in (first..count).zip(v::to_array(r)).zip(v::to_array(mean)) {
                let span = row * dim..(row + 1) * dim;
                normalize_row(&x[span.clone()], mean, r, weight, bias, &mut out[span]);
            }
        }
    }

    /// One row: `LANES` columns at a time, the tail by [`affine`].
    fn normalize_row[X: Float, T: Float](
        x: &[X],
        mean: f32,
        r: f32,
        weight: Option<&[T]>,
        bias: Option<&[T]>,
        out: &mut [T],
    ) {
        let (mean_v, rv) = (v::splat(mean), v::splat(r));
        let n =
            x.len().min(out.len()).min(weight.map_or(usize::MAX, <[T]>::len)).min(bias.map_or(usize::MAX, <[T]>::len));
        let mut c = 0;
        while c + v::LANES <= n {
            let centred = v::sub(v::load_at(x, c), mean_v);
            let mut y = v::round::<T>(v::mul(centred, rv));
            if let Some(w) = weight {
                y = v::round::<T>(v::mul(y, v::load_at(w, c)));
            }
            if let Some(b) = bias {
                y = v::add(y, v::load_at(b, c));
            }
            v::store_at(out, c, y);
            c += v::LANES;
        }
        for c in c..n {
            out[c] = affine(x[c].to_f32() - mean, r, weight.map(|w| w[c]), bias.map(|b| b[c]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::testing::{bits, cast, floats};
    use half::bf16;
    use proptest::prelude::*;

    fn check_paths<X: Float, T: Float>(x: &[X], weight: Option<&[T]>, bias: Option<&[T]>, eps: f32, dim: usize) {
        let mut want = vec![T::default(); x.len()];
        layer_norm_scalar(x, weight, bias, eps, dim, &mut want).unwrap();
        let mut got = vec![T::default(); x.len()];
        layer_norm(x, weight, bias, eps, dim, &mut got).unwrap();
        assert_eq!(bits(&got), bits(&want), "layer_norm");
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = crate::cpu::isa().avx2() {
            let mut lanes = vec![T::default(); x.len()];
            avx2::rows(avx2, x, weight, bias, eps, dim, &mut lanes);
            assert_eq!(bits(&lanes), bits(&want), "avx2");
        }
        #[cfg(target_arch = "aarch64")]
        if let Some(neon) = crate::cpu::isa().neon() {
            let mut lanes = vec![T::default(); x.len()];
            neon::rows(neon, x, weight, bias, eps, dim, &mut lanes);
            assert_eq!(bits(&lanes), bits(&want), "neon");
        }
    }

    #[test]
    fn rejects_bad_extents() {
        let x = [1f32; 12];
        let mut out = [0f32; 12];
        let short = [1f32; 3];
        assert!(matches!(layer_norm::<f32, f32>(&x, None, None, 1e-5, 0, &mut out), Err(Error::Shape { .. })));
        assert!(matches!(layer_norm(&x, Some(&short[..]), None, 1e-5, 4, &mut out), Err(Error::Shape { .. })));
        assert!(matches!(layer_norm(&x, None, Some(&short[..]), 1e-5, 4, &mut out), Err(Error::Shape { .. })));
        assert!(matches!(layer_norm::<f32, f32>(&x, None, None, 1e-5, 4, &mut out[1..]), Err(Error::Shape { .. })));
    }

    #[test]
    fn a_known_row() {
        let mut out = [0f32; 4];
        layer_norm(
            &[1f32, 3.0, 1.0, 3.0],
            Some(&[2f32, 1.0, 1.0, 1.0]),
            Some(&[0f32, 0.0, 0.0, 10.0]),
            0.0,
            4,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, [-2.0, 1.0, -1.0, 11.0]);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn paths_agree_on_random_rows(
            rows in 1usize..21,
            dim in prop_oneof![1usize..20, Just(64), Just(768)],
            seed in prop::collection::vec(floats((6, -4.0..4.0),
                vec![0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-40, 3e19, f32::MAX]), 64),
            (weighted, biased) in (any::<bool>(), any::<bool>()),
        ) {
            let x: Vec<f32> = (0..rows * dim).map(|i| seed[(i * 31 + i / 7) % seed.len()] + (i % 5) as f32).collect();
            let w: Vec<f32> = (0..dim).map(|i| seed[(i * 17 + 5) % seed.len()]).collect();
            let b: Vec<f32> = (0..dim).map(|i| seed[(i * 13 + 1) % seed.len()]).collect();
            let (w, b) = (weighted.then_some(&w[..]), biased.then_some(&b[..]));
            check_paths(&x, w, b, 1e-5, dim);
            let (xb, wb, bb) = (cast::<bf16>(&x), w.map(cast::<bf16>), b.map(cast::<bf16>));
            check_paths(&xb, wb.as_deref(), bb.as_deref(), 1e-5, dim);
            check_paths(&xb, w, b, 1e-5, dim);
        }
    }
}
