//! mlx-vlm's gemma4 `VisionRMSNorm` / `VisionRMSNormNoScale` op sequence, in float32.
//!
//! Per row of `D` (a head of the queries, keys or values), with MLX ops:
//!
//! ```text
//! f = x.astype(float32)
//! m = mean(power(f, 2), -1)       // powf(f, 2) (not square), Σ in index order, · float32(1/D)
//! y = f * rsqrt(m + eps)          // eps a weak float32 scalar (1e-6); rsqrt = 1.0f / sqrtf
//! y = y * weight.astype(float32)  // VisionRMSNorm only: scaled in float32, before the cast
//! y.astype(x.dtype)
//! ```
//!
//! [`vision_rms_norm_scalar`] is that sequence element by element (the definition of the
//! bits); [`vision_rms_norm`] gives the same bits over all cores, squaring with
//! [`square_as_pow`] (exactly `powf(f, 2)`, without calling it
//! for most values) and 8 rows per AVX2 vector (4 per NEON vector) where available. [`normalize_heads`] fuses the
//! norm of every head with the RoPE that follows it in the reference
//! ([`rope`]), in place.

use crate::cpu::Isa;
use crate::power::{pow, square_as_pow};
use crate::rope::{self, RopePartition};
use crate::{Float, Result, parallel, rows};

const KERNEL: &str = "vision_rms_norm";

/// gemma4's `VisionRMSNorm` (with `weight` `[dim]`, any [`Float`]) or `VisionRMSNormNoScale`
/// (without) over rows of `dim`: `x` and `out` `[rows, dim]` in `T` (float32 or bf16). `eps`
/// is the reference's constructor default, 1e-6. MLX 0.32's CPU bits (bf16 NaNs as `0x7FC0`;
/// in float32 a row with NaNs of several payloads may carry either, as in MLX).
///
/// Fails with [`Error::Shape`](crate::Error::Shape) if `dim` is 0, `out` and `x` differ in
/// length, `dim` does not divide it, or the weight does not have `dim` values.
pub fn vision_rms_norm<T: Float, W: Float>(
    x: &[T],
    weight: Option<&[W]>,
    eps: f32,
    dim: usize,
    out: &mut [T],
) -> Result<()> {
    check(x.len(), out.len(), weight.map(<[W]>::len), dim)?;
    out.copy_from_slice(x);
    vision_rms_norm_in_place(out, weight, eps, dim)
}

/// [`vision_rms_norm`] in place.
pub fn vision_rms_norm_in_place<T: Float, W: Float>(
    x: &mut [T],
    weight: Option<&[W]>,
    eps: f32,
    dim: usize,
) -> Result<()> {
    check(x.len(), x.len(), weight.map(<[W]>::len), dim)?;
    let weight = widen(weight);
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(x, dim, rows::min_rows(dim), |_, block| {
        normalize_rows(isa, block, weight.as_deref(), eps, dim);
    });
    Ok(())
}

/// [`vision_rms_norm`] computed as the op sequence reads (with the C library's `powf`), one
/// element at a time on this thread: the definition of the bits. Same arguments and errors.
pub fn vision_rms_norm_scalar<T: Float, W: Float>(
    x: &[T],
    weight: Option<&[W]>,
    eps: f32,
    dim: usize,
    out: &mut [T],
) -> Result<()> {
    check(x.len(), out.len(), weight.map(<[W]>::len), dim)?;
    let inverse_dim = rows::inverse_count(dim);
    for (x, out) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
        let mut sum = 0f32;
        for v in x {
            sum += pow(v.to_f32(), 2.0);
        }
        let r = 1.0 / (sum * inverse_dim + eps).sqrt();
        for (i, (o, v)) in out.iter_mut().zip(x).enumerate() {
            *o = scale(v.to_f32(), r, weight.map(|w| w[i].to_f32()));
        }
    }
    Ok(())
}

/// The attention heads' preparation in gemma4's vision attention, in place on `x`
/// `[tokens, heads, head_dim]` (token-major, as the projection leaves them): every head is
/// normalised as [`vision_rms_norm`] (with `weight` `[head_dim]` for the queries and keys,
/// without for the values), rounded to `T`, then rotated by `rope` (queries and keys) as
/// [`rope::rope`]. The same bits as the two kernels one after the other; one pass over memory.
///
/// Fails with [`Error::Shape`](crate::Error::Shape) on extents either kernel refuses.
pub fn normalize_heads<T: Float, W: Float>(
    x: &mut [T],
    heads: usize,
    head_dim: usize,
    weight: Option<&[W]>,
    eps: f32,
    rope: Option<&[RopePartition<T>]>,
) -> Result<()> {
    check(x.len(), x.len(), weight.map(<[W]>::len), head_dim)?;
    if let Some(parts) = rope {
        rope::check(x.len(), x.len(), heads, head_dim, parts)?;
    }
    let weight = widen(weight);
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(x, head_dim, rows::min_rows(head_dim), |first, block| {
        normalize_rows(isa, block, weight.as_deref(), eps, head_dim);
        if let Some(parts) = rope {
            for (i, head) in block.chunks_exact_mut(head_dim).enumerate() {
                rope::rotate_head(isa, head, (first + i) / heads.max(1), parts);
            }
        }
    });
    Ok(())
}

fn check(input: usize, output: usize, weight: Option<usize>, dim: usize) -> Result<()> {
    rows::rows(KERNEL, input, output, dim)?;
    rows::parameter(KERNEL, "weight", weight, dim)
}

/// `weight.astype(float32)`.
fn widen<W: Float>(weight: Option<&[W]>) -> Option<Vec<f32>> {
    weight.map(|w| w.iter().map(|v| v.to_f32()).collect())
}

/// One output: `T(f · r)`, or `T((f · r) · w)` with a weight.
#[inline(always)]
fn scale<T: Float>(f: f32, r: f32, weight: Option<f32>) -> T {
    let y = f * r;
    T::from_f32(match weight {
        Some(w) => y * w,
        None => y,
    })
}

/// Normalises whole rows in place by the fastest path the CPU has.
fn normalize_rows<T: Float>(isa: Isa, x: &mut [T], weight: Option<&[f32]>, eps: f32, dim: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = isa.avx2() {
        avx2::normalize_rows(avx2, x, weight, eps, dim);
        return;
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(neon) = isa.neon() {
        neon::normalize_rows(neon, x, weight, eps, dim);
        return;
    }
    let _ = isa;
    normalize_rows_portable(x, weight, eps, dim);
}

/// Row by row, element by element, squaring with [`square_as_pow`].
fn normalize_rows_portable<T: Float>(x: &mut [T], weight: Option<&[f32]>, eps: f32, dim: usize) {
    let inverse_dim = rows::inverse_count(dim);
    for row in x.chunks_exact_mut(dim) {
        let mut sum = 0f32;
        for v in row.iter() {
            sum += square_as_pow(v.to_f32());
        }
        let r = 1.0 / (sum * inverse_dim + eps).sqrt();
        for (i, v) in row.iter_mut().enumerate() {
            *v = scale(v.to_f32(), r, weight.map(|w| w[i]));
        }
    }
}

crate::simd::stamp! {
    lanes v (power = crate::power) for Avx2, Neon;

    /// Groups of `LANES` rows: the sums of `powf(f, 2)` in one vector (a row per lane), then
    /// each row scaled in place `LANES` columns at a time.
    entry fn normalize_rows[T: Float](x: &mut [T], weight: Option<&[f32]>, eps: f32, dim: usize) {
        let count = x.len() / dim;
        let inverse_dim = v::splat(rows::inverse_count(dim));
        for first in (0..count).step_by(v::LANES) {
            let pointers = crate::simd::row_pointers(x, dim, first);
            // SAFETY: each pointer starts a row of `dim` values of `x`, read before any write.
            let sums = unsafe { v::row_sums(&pointers, dim, |f| power::square_as_pow(f)) };
            let mean = v::mul(sums, inverse_dim);
            let r = v::div(v::splat(1.0), v::sqrt(v::add(mean, v::splat(eps))));
            for (row, r) in (first..count).zip(v::to_array(r)) {
                scale_row(&mut x[row * dim..(row + 1) * dim], r, weight);
            }
        }
    }

    /// One row in place: `LANES` columns at a time, the tail by [`scale`].
    fn scale_row[T: Float](x: &mut [T], r: f32, weight: Option<&[f32]>) {
        let rv = v::splat(r);
        let n = x.len().min(weight.map_or(usize::MAX, <[f32]>::len));
        let mut c = 0;
        while c + v::LANES <= n {
            let y = v::mul(v::load_at(x, c), rv);
            let y = match weight {
                Some(w) => v::mul(y, v::load_at(w, c)),
                None => y,
            };
            v::store_at(x, c, y);
            c += v::LANES;
        }
        for c in c..n {
            x[c] = scale(x[c].to_f32(), r, weight.map(|w| w[c]));
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

    fn check_paths<T: Float, W: Float>(x: &[T], weight: Option<&[W]>, eps: f32, dim: usize) {
        let mut want = vec![T::default(); x.len()];
        vision_rms_norm_scalar(x, weight, eps, dim, &mut want).unwrap();
        let mut got = vec![T::default(); x.len()];
        vision_rms_norm(x, weight, eps, dim, &mut got).unwrap();
        assert_eq!(bits(&got), bits(&want), "vision_rms_norm");
        let mut portable = x.to_vec();
        normalize_rows_portable(&mut portable, widen(weight).as_deref(), eps, dim);
        assert_eq!(bits(&portable), bits(&want), "portable");
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = crate::cpu::isa().avx2() {
            let mut lanes = x.to_vec();
            avx2::normalize_rows(avx2, &mut lanes, widen(weight).as_deref(), eps, dim);
            assert_eq!(bits(&lanes), bits(&want), "avx2");
        }
        #[cfg(target_arch = "aarch64")]
        if let Some(neon) = crate::cpu::isa().neon() {
            let mut lanes = x.to_vec();
            neon::normalize_rows(neon, &mut lanes, widen(weight).as_deref(), eps, dim);
            assert_eq!(bits(&lanes), bits(&want), "neon");
        }
    }

    #[test]
    fn rejects_bad_extents() {
        let x = [1f32; 12];
        let mut out = [0f32; 12];
        assert!(matches!(vision_rms_norm::<f32, f32>(&x, None, 1e-6, 0, &mut out), Err(Error::Shape { .. })));
        assert!(matches!(vision_rms_norm::<f32, f32>(&x, None, 1e-6, 5, &mut out), Err(Error::Shape { .. })));
        assert!(matches!(vision_rms_norm(&x, Some(&[1f32; 3][..]), 1e-6, 4, &mut out), Err(Error::Shape { .. })));
        let mut y = x;
        assert!(matches!(normalize_heads::<f32, f32>(&mut y, 2, 5, None, 1e-6, None), Err(Error::Shape { .. })));
    }

    /// Rows where `powf(f, 2)` differs from `f * f`: the norm must use the former.
    #[test]
    fn squares_with_powf() {
        let f: Vec<f32> = (0..1 << 16).map(|i| f32::from_bits(0x3F80_0000 + i * 61)).collect();
        let differing = f.iter().filter(|&&v| pow(v, 2.0).to_bits() != (v * v).to_bits()).count();
        assert!(differing > 0);
        check_paths::<f32, f32>(&f, None, 1e-6, 64);
        check_paths::<f32, f32>(&f, None, 1e-6, 1);
    }

    #[test]
    fn fused_heads_equal_norm_then_rope() {
        let (tokens, heads, head_dim) = (37, 3, 64);
        let x: Vec<bf16> =
            (0..tokens * heads * head_dim).map(|i| bf16::from_f32(((i * 37) % 101) as f32 / 9.0 - 5.0)).collect();
        let w: Vec<bf16> = (0..head_dim).map(|i| bf16::from_f32(1.0 + i as f32 / 64.0)).collect();
        let c = head_dim / 2;
        let table = |f: fn(f32) -> f32, axis: usize| -> Vec<bf16> {
            (0..tokens * c)
                .map(|i| bf16::from_f32(f(((i / c) % (5 + axis)) as f32 / (1.0 + (i % (c / 2)) as f32))))
                .collect()
        };
        let (cx, sx, cy, sy) = (table(f32::cos, 0), table(f32::sin, 0), table(f32::cos, 1), table(f32::sin, 1));
        let parts = [RopePartition::new(&cx, &sx, c).unwrap(), RopePartition::new(&cy, &sy, c).unwrap()];
        let mut normed = vec![bf16::ZERO; x.len()];
        vision_rms_norm_scalar(&x, Some(&w), 1e-6, head_dim, &mut normed).unwrap();
        let mut want = vec![bf16::ZERO; x.len()];
        rope::rope_scalar(&normed, heads, head_dim, &parts, &mut want).unwrap();
        let mut fused = x.clone();
        normalize_heads(&mut fused, heads, head_dim, Some(&w), 1e-6, Some(&parts)).unwrap();
        assert_eq!(bits(&fused), bits(&want));
        let mut values = x.clone();
        normalize_heads::<bf16, bf16>(&mut values, heads, head_dim, None, 1e-6, None).unwrap();
        vision_rms_norm_scalar::<bf16, bf16>(&x, None, 1e-6, head_dim, &mut want).unwrap();
        assert_eq!(bits(&values), bits(&want));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn paths_agree_on_random_rows(
            rows in 1usize..21,
            dim in prop_oneof![1usize..20, Just(64), Just(72)],
            seed in prop::collection::vec(floats((6, -4.0..4.0),
                vec![0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-40, 1e-20, 3e19, f32::MAX]), 64),
            weighted in any::<bool>(),
        ) {
            let x: Vec<f32> = (0..rows * dim).map(|i| seed[(i * 31 + i / 7) % seed.len()]).collect();
            let w: Vec<f32> = (0..dim).map(|i| seed[(i * 17 + 5) % seed.len()]).collect();
            let w = weighted.then_some(&w[..]);
            check_paths(&x, w, 1e-6, dim);
            let (xb, wb) = (cast::<bf16>(&x), w.map(cast::<bf16>));
            check_paths(&xb, wb.as_deref(), 1e-6, dim);
            check_paths(&xb, w, 1e-6, dim);
        }
    }
}
