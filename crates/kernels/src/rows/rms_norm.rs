//! `mx.fast.rms_norm` as MLX 0.32 computes it on the CPU (its fallback op sequence).
//!
//! The CPU has no fused RMS-norm kernel: `fast::rms_norm` runs its fallback, per row of `D`:
//!
//! ```text
//! f = x.astype(float32)
//! m = mean(square(f), -1)          // Σ f·f in index order from 0, then · float32(1/D)
//! r = rsqrt(m + eps)               // 1.0f / sqrtf(·); eps a float32 array
//! y = (f * r).astype(T)            // T = result_type(x, weight), or x's dtype without weight
//! y = y * weight                   // in T, the weight cast to T; only with a weight
//! ```
//!
//! [`rms_norm_scalar`] is that sequence element by element (the definition of the bits);
//! [`rms_norm`] gives the same bits over all cores, 8 rows per AVX2 vector (4 per NEON vector)
//! where available: each row's sum stays in one lane, in index order.

use crate::cpu::Isa;
use crate::{Float, Result, parallel, rows};

const KERNEL: &str = "rms_norm";

/// `fast.rms_norm(x, weight, eps)` over rows of `dim`: `x` `[rows, dim]` of any [`Float`]
/// (float32 or bf16), `weight` `[dim]` already in the output dtype `T` (MLX casts it to
/// `result_type(x, weight)`: bf16 weights with float32 `x` give `T = f32`), `out`
/// `[rows, dim]` in `T`. MLX 0.32's CPU bits for every input, infinities included; a NaN
/// gives NaN where MLX does (bf16: `0x7FC0`; float32: a row holding NaNs of several payloads
/// may carry either, as the operand order the compiler picks decides in MLX too).
///
/// Fails with [`Error::Shape`](crate::Error::Shape) if `dim` is 0, `out` and `x` differ in
/// length, `dim` does not divide it, or the weight does not have `dim` values.
pub fn rms_norm<X: Float, T: Float>(x: &[X], weight: Option<&[T]>, eps: f32, dim: usize, out: &mut [T]) -> Result<()> {
    check(x, weight, dim, out)?;
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(out, dim, rows::min_rows(dim), |first, out| {
        let start = first * dim;
        rows_block(isa, &x[start..start + out.len()], weight, eps, dim, out);
    });
    Ok(())
}

/// [`rms_norm`] computed as MLX's op sequence reads, one element at a time on this thread:
/// the definition of the bits. Same arguments and errors.
pub fn rms_norm_scalar<X: Float, T: Float>(
    x: &[X],
    weight: Option<&[T]>,
    eps: f32,
    dim: usize,
    out: &mut [T],
) -> Result<()> {
    check(x, weight, dim, out)?;
    rows_portable(x, weight, eps, dim, out);
    Ok(())
}

fn check<X, T>(x: &[X], weight: Option<&[T]>, dim: usize, out: &[T]) -> Result<()> {
    rows::rows(KERNEL, x.len(), out.len(), dim)?;
    rows::parameter(KERNEL, "weight", weight.map(<[T]>::len), dim)
}

/// Whole rows of `x` and `out` (checked), by the fastest path the CPU has.
fn rows_block<X: Float, T: Float>(isa: Isa, x: &[X], weight: Option<&[T]>, eps: f32, dim: usize, out: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = isa.avx2() {
        avx2::rows(avx2, x, weight, eps, dim, out);
        return;
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(neon) = isa.neon() {
        neon::rows(neon, x, weight, eps, dim, out);
        return;
    }
    let _ = isa;
    rows_portable(x, weight, eps, dim, out);
}

/// Row by row, element by element: the op sequence.
fn rows_portable<X: Float, T: Float>(x: &[X], weight: Option<&[T]>, eps: f32, dim: usize, out: &mut [T]) {
    let inverse_dim = rows::inverse_count(dim);
    for (x, out) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
        let mut sum = 0f32;
        for v in x {
            let f = v.to_f32();
            sum += f * f;
        }
        let r = 1.0 / (sum * inverse_dim + eps).sqrt();
        for (i, (o, v)) in out.iter_mut().zip(x).enumerate() {
            *o = scale(v.to_f32(), r, weight.map(|w| w[i]));
        }
    }
}

/// One output: `T(f · r)`, then `T(· × w)` with a weight.
#[inline(always)]
fn scale<T: Float>(f: f32, r: f32, weight: Option<T>) -> T {
    let y = T::from_f32(f * r);
    match weight {
        Some(w) => T::from_f32(y.to_f32() * w.to_f32()),
        None => y,
    }
}

crate::simd::stamp! {
    lanes v for Avx2, Neon;

    /// Groups of `LANES` rows: the sums of squares in one vector (a row per lane; a multiply
    /// then an add, as the scalar loop), then each row scaled `LANES` columns at a time.
    entry fn rows[X: Float, T: Float](x: &[X], weight: Option<&[T]>, eps: f32, dim: usize, out: &mut [T]) {
        let count = x.len() / dim;
        let inverse_dim = v::splat(rows::inverse_count(dim));
        for first in (0..count).step_by(v::LANES) {
            let pointers = crate::simd::row_pointers(x, dim, first);
            // SAFETY: each pointer starts a row of `dim` values of `x`.
            let sums = unsafe { v::row_sums(&pointers, dim, |f| v::mul(f, f)) };
            let mean = v::mul(sums, inverse_dim);
            let r = v::div(v::splat(1.0), v::sqrt(v::add(mean, v::splat(eps))));
            for (row, r) in (first..count).zip(v::to_array(r)) {
                let span = row * dim..(row + 1) * dim;
                scale_row(&x[span.clone()], r, weight, &mut out[span]);
            }
        }
    }

    /// One row: `LANES` columns at a time, the tail by [`scale`].
    fn scale_row[X: Float, T: Float](x: &[X], r: f32, weight: Option<&[T]>, out: &mut [T]) {
        let rv = v::splat(r);
        let n = x.len().min(out.len()).min(weight.map_or(usize::MAX, <[T]>::len));
        let mut c = 0;
        while c + v::LANES <= n {
            let y = v::round::<T>(v::mul(v::load_at(x, c), rv));
            let y = match weight {
                Some(w) => v::mul(y, v::load_at(w, c)),
                None => y,
            };
            v::store_at(out, c, y);
            c += v::LANES;
        }
        for c in c..n {
            out[c] = scale(x[c].to_f32(), r, weight.map(|w| w[c]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::testing::{bits, cast, floats, norm_specials};
    use half::bf16;
    use proptest::prelude::*;

    /// Both paths (and the parallel entry point) against the twin.
    fn check_paths<X: Float, T: Float>(x: &[X], weight: Option<&[T]>, eps: f32, dim: usize) {
        let mut want = vec![T::default(); x.len()];
        rms_norm_scalar(x, weight, eps, dim, &mut want).unwrap();
        let mut got = vec![T::default(); x.len()];
        rms_norm(x, weight, eps, dim, &mut got).unwrap();
        assert_eq!(bits(&got), bits(&want), "rms_norm");
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = crate::cpu::isa().avx2() {
            let mut lanes = vec![T::default(); x.len()];
            avx2::rows(avx2, x, weight, eps, dim, &mut lanes);
            assert_eq!(bits(&lanes), bits(&want), "avx2");
        }
        #[cfg(target_arch = "aarch64")]
        if let Some(neon) = crate::cpu::isa().neon() {
            let mut lanes = vec![T::default(); x.len()];
            neon::rows(neon, x, weight, eps, dim, &mut lanes);
            assert_eq!(bits(&lanes), bits(&want), "neon");
        }
    }

    #[test]
    fn rejects_bad_extents() {
        let x = [1f32; 12];
        let mut out = [0f32; 12];
        for (dim, w) in [(0, None), (5, None), (4, Some(&[1f32; 3][..]))] {
            assert!(matches!(rms_norm(&x, w, 1e-6, dim, &mut out), Err(Error::Shape { .. })));
            assert!(matches!(rms_norm_scalar(&x, w, 1e-6, dim, &mut out), Err(Error::Shape { .. })));
        }
        assert!(matches!(rms_norm(&x, None, 1e-6, 4, &mut out[..8]), Err(Error::Shape { .. })));
        rms_norm::<f32, f32>(&[], None, 1e-6, 4, &mut []).unwrap();
    }

    #[test]
    fn a_known_row() {
        let mut out = [0f32; 4];
        rms_norm(&[1f32, -1.0, 1.0, -1.0], Some(&[2f32, 2.0, 1.0, 0.5]), 0.0, 4, &mut out).unwrap();
        assert_eq!(out, [2.0, -2.0, 1.0, -0.5]);
    }

    #[test]
    fn e2b_rows_split_over_threads() {
        let (rows, dim) = (203, 768);
        let x: Vec<bf16> = (0..rows * dim).map(|i| bf16::from_f32(((i * 7919) % 1013) as f32 / 97.0 - 5.0)).collect();
        let w: Vec<bf16> = (0..dim).map(|i| bf16::from_f32(0.5 + (i % 13) as f32 / 8.0)).collect();
        check_paths(&x, Some(&w), 1e-6, dim);
        check_paths::<bf16, bf16>(&x, None, 1e-6, dim);
        let wf: Vec<f32> = w.iter().map(|v| v.to_f32()).collect();
        check_paths(&x, Some(&wf), 1e-6, dim);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn paths_agree_on_random_rows(
            rows in 1usize..21,
            dim in prop_oneof![1usize..20, Just(64), Just(72), Just(768)],
            seed in prop::collection::vec(floats((6, -4.0..4.0), norm_specials()), 64),
            weighted in any::<bool>(),
            eps in prop::sample::select(vec![1e-6f32, 1e-5, 0.0]),
        ) {
            let x: Vec<f32> = (0..rows * dim).map(|i| seed[(i * 31 + i / 7) % seed.len()] * (1 + i % 3) as f32).collect();
            let w: Vec<f32> = (0..dim).map(|i| seed[(i * 17 + 5) % seed.len()]).collect();
            let w = weighted.then_some(&w[..]);
            check_paths(&x, w, eps, dim);
            let (xb, wb) = (cast::<bf16>(&x), w.map(cast::<bf16>));
            check_paths(&xb, wb.as_deref(), eps, dim);
            check_paths(&xb, w, eps, dim);
        }
    }
}
