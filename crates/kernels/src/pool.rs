//! The averaging of gemma4's `VisionPooler`, with the bits of the float32 matmul MLX runs.
//!
//! The reference pools patch features into slots with a one-hot matrix,
//! `W = one_hot(idx, length).astype(f32) / k²` `[B, L, length]`, and
//! `einsum("bLl,bLd->bld", W, h.astype(f32)).astype(h.dtype)`. MLX turns the einsum into a
//! float32 matmul (the reference BLAS: per output a sum over the tokens in order, starting
//! from 0, of separately rounded products), so every output is
//!
//! ```text
//! pooled[s, d] = 0 + fl(W[0, s]·h[0, d]) + fl(W[1, s]·h[1, d]) + …   (tokens in order)
//! ```
//!
//! A token outside slot `s` adds `fl(0·h) = ±0`, which changes nothing unless `h` is not
//! finite: `0·∞` and `0·NaN` are NaN, so a non-finite feature anywhere in column `d` makes
//! the column NaN in every other slot (as MLX computes it; checked against MLX). [`pool`]
//! sums each slot's own tokens in order and replays the non-finite products where they fall,
//! so it is the same function at a cost of one product and one sum per token and feature
//! instead of `length` of them.

use crate::{Error, Float, Result, parallel};

const KERNEL: &str = "pool";

/// `pooled = einsum("bLl,bLd->bld", W, h.astype(f32)).astype(T)` for `h` `[batch, tokens,
/// dim]` in `T` and the one-hot `W` given as each token's slot: `slots` `[batch, tokens]`
/// (a slot `≥ length` is no slot: that token's one-hot row is all zeros) and the members'
/// weight `weight` (the reference's float32 `1 / k²`: `1.0 / (k * k) as f32`, rounded once).
/// `out` is `[batch, length, dim]` in `T`. MLX 0.32's CPU bits (bf16 NaNs `0x7FC0`; a float32
/// NaN's payload is not specified). Over all cores (slots split between them).
///
/// Fails with [`Error::Shape`] if `dim` or `length` is 0 or the slices do not have those
/// extents.
pub fn pool<T: Float>(h: &[T], slots: &[usize], dim: usize, length: usize, weight: f32, out: &mut [T]) -> Result<()> {
    let (batch, tokens) = extents(h.len(), slots.len(), dim, length, out.len())?;
    // Which tokens have a non-finite feature (their zero products reach the other slots).
    let non_finite: Vec<bool> =
        h.chunks_exact(dim).map(|row| row.iter().fold(false, |any, v| any | !v.to_f32().is_finite())).collect();
    // Output rows are (batch row, slot) pairs, one block per thread; a block scans the tokens
    // of each batch row it touches, in order.
    let per_thread = (batch * length).div_ceil(parallel::threads().max(1));
    parallel::for_row_blocks(out, dim, per_thread.max(crate::rows::min_rows(dim)), |first, block| {
        let rows = block.len() / dim;
        let mut sums = vec![0f32; block.len()];
        for b in first / length..(first + rows).div_ceil(length) {
            let tokens_of_b = b * tokens..(b + 1) * tokens;
            let (lo, hi) = (first.max(b * length), (first + rows).min((b + 1) * length));
            accumulate(
                &h[tokens_of_b.start * dim..tokens_of_b.end * dim],
                &slots[tokens_of_b.clone()],
                &non_finite[tokens_of_b],
                dim,
                weight,
                lo - b * length..hi - b * length,
                &mut sums[(lo - first) * dim..(hi - first) * dim],
            );
        }
        for (o, &s) in block.iter_mut().zip(&sums) {
            *o = T::from_f32(s);
        }
    });
    Ok(())
}

/// `(batch, tokens)` of the arguments, or [`Error::Shape`].
fn extents(h: usize, slots: usize, dim: usize, length: usize, out: usize) -> Result<(usize, usize)> {
    if dim == 0 || length == 0 {
        return Err(Error::shape(KERNEL, format!("dim {dim} and length {length} must be positive")));
    }
    let batch = out / (length * dim);
    let tokens = slots.checked_div(batch).unwrap_or(0);
    if out != batch * length * dim || slots != batch * tokens || h != slots * dim {
        return Err(Error::shape(
            KERNEL,
            format!(
                "features of {h} values, slots of {slots} and an output of {out} for [batch, tokens, {dim}] into {length} slots"
            ),
        ));
    }
    Ok((batch, tokens))
}

/// The sums of slots `range` (rows of `sums`) over the tokens of one batch row, in order.
fn accumulate<T: Float>(
    h: &[T],
    slots: &[usize],
    non_finite: &[bool],
    dim: usize,
    weight: f32,
    range: std::ops::Range<usize>,
    sums: &mut [f32],
) {
    for ((&slot, &non_finite), features) in slots.iter().zip(non_finite).zip(h.chunks_exact(dim)) {
        if range.contains(&slot) {
            let row = slot - range.start;
            add_products(&mut sums[row * dim..(row + 1) * dim], features, weight);
        }
        // The zero products of this token in the other slots: ±0 unless a feature is not finite.
        if non_finite {
            for (row, sum) in sums.chunks_exact_mut(dim).enumerate() {
                if range.start + row != slot {
                    for (s, v) in sum.iter_mut().zip(features) {
                        *s += 0.0 * v.to_f32();
                    }
                }
            }
        }
    }
}

/// `sums[d] += fl(weight · f32(features[d]))`, by the fastest path the CPU has.
fn add_products<T: Float>(sums: &mut [f32], features: &[T], weight: f32) {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked at run time just above).
        unsafe { avx2::add_products(sums, features, weight) };
        return;
    }
    add_products_portable(sums, features, weight);
}

fn add_products_portable<T: Float>(sums: &mut [f32], features: &[T], weight: f32) {
    for (s, v) in sums.iter_mut().zip(features) {
        *s += weight * v.to_f32();
    }
}

/// [`pool`] as the matmul reads: every output the sum over all tokens of
/// `fl(W[token, slot] · h)`, zero weights included, one element at a time on this thread.
/// The definition of the bits; same arguments and errors.
pub fn pool_scalar<T: Float>(
    h: &[T],
    slots: &[usize],
    dim: usize,
    length: usize,
    weight: f32,
    out: &mut [T],
) -> Result<()> {
    let (batch, tokens) = extents(h.len(), slots.len(), dim, length, out.len())?;
    for b in 0..batch {
        for s in 0..length {
            for d in 0..dim {
                let mut sum = 0f32;
                for l in 0..tokens {
                    let w = if slots[b * tokens + l] == s { weight } else { 0.0 };
                    sum += w * h[(b * tokens + l) * dim + d].to_f32();
                }
                out[(b * length + s) * dim + d] = T::from_f32(sum);
            }
        }
    }
    Ok(())
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use crate::Float;
    use crate::lanes::load8;
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn add_products<T: Float>(sums: &mut [f32], features: &[T], weight: f32) {
        let n = sums.len().min(features.len());
        let w = _mm256_set1_ps(weight);
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: `i + 8 <= n` bounds both slices. A product, then a sum: no FMA.
            unsafe {
                let s = _mm256_loadu_ps(sums.as_ptr().add(i));
                let p = _mm256_mul_ps(w, load8(features.as_ptr().add(i)));
                _mm256_storeu_ps(sums.as_mut_ptr().add(i), _mm256_add_ps(s, p));
            }
            i += 8;
        }
        for i in i..n {
            sums[i] += weight * features[i].to_f32();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;
    use proptest::prelude::*;

    fn bits<T: Float>(v: &[T]) -> Vec<u32> {
        v.iter().map(|x| if x.to_f32().is_nan() { u32::MAX } else { x.to_f32().to_bits() }).collect()
    }

    #[test]
    fn rejects_bad_extents() {
        let h = [1f32; 12];
        let mut out = [0f32; 6];
        assert!(matches!(pool(&h, &[0, 1, 0, 1], 0, 2, 0.5, &mut out), Err(Error::Shape { .. })));
        assert!(matches!(pool(&h, &[0, 1, 0], 3, 2, 0.5, &mut out), Err(Error::Shape { .. })));
        assert!(matches!(pool(&h, &[0, 1, 0, 1], 3, 2, 0.5, &mut out[1..]), Err(Error::Shape { .. })));
        pool(&h, &[0, 1, 0, 1], 3, 2, 0.5, &mut out).unwrap();
        assert_eq!(out, [1.0; 6]);
    }

    #[test]
    fn non_finite_features_spread_to_the_other_slots() {
        let h = [1f32, f32::INFINITY, 2.0, 3.0];
        let mut out = [0f32; 4];
        pool(&h, &[0, 1], 2, 2, 1.0, &mut out).unwrap();
        // Token 0 ([1, ∞]) is slot 0's, token 1 ([2, 3]) slot 1's: slot 1 adds 0·∞ in column 1.
        assert_eq!(out[..3], [1.0, f32::INFINITY, 2.0]);
        assert!(out[3].is_nan(), "0·∞ reaches slot 1");
    }

    proptest! {
        #[test]
        fn pool_equals_the_matmul_order(
            tokens in 1usize..8,
            batch in 1usize..3,
            dim in prop::sample::select(vec![1usize, 3, 8, 13]),
            length in 1usize..5,
            values in prop::collection::vec(prop_oneof![
                8 => -4f32..4.0,
                1 => prop::sample::select(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 1e-40]),
            ], 1..64),
            slot_seed in prop::collection::vec(0usize..6, 16),
        ) {
            let h: Vec<f32> = (0..batch * tokens * dim).map(|i| values[i % values.len()]).collect();
            let slots: Vec<usize> = (0..batch * tokens).map(|i| slot_seed[i % slot_seed.len()]).collect();
            let weight = 1.0 / 9.0;
            let mut want = vec![0f32; batch * length * dim];
            pool_scalar(&h, &slots, dim, length, weight, &mut want).unwrap();
            let mut got = vec![0f32; want.len()];
            pool(&h, &slots, dim, length, weight, &mut got).unwrap();
            prop_assert_eq!(bits(&got), bits(&want));
            let hb: Vec<bf16> = h.iter().map(|&v| crate::bf16_from_f32(v)).collect();
            let mut want = vec![bf16::ZERO; batch * length * dim];
            pool_scalar(&hb, &slots, dim, length, weight, &mut want).unwrap();
            let mut got = vec![bf16::ZERO; want.len()];
            pool(&hb, &slots, dim, length, weight, &mut got).unwrap();
            prop_assert_eq!(bits(&got), bits(&want));
        }
    }
}
