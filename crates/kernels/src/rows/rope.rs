//! mlx-vlm's `apply_multidimensional_rope` (gemma4 vision), op by op in the input dtype.
//!
//! The reference splits each head of `D` channels into partitions (gemma4: two of `D/2`, one
//! per image axis; the 1-D fallback: one of `D`) and rotates each partition `u` of `c`
//! channels, with `h = c/2`, by its position's tables:
//!
//! ```text
//! rotate_half(u) = concatenate([-u[h:], u[:h]])
//! u' = u * cos + rotate_half(u) * sin          // each op rounds to T (MLX element-wise ops)
//! ```
//!
//! `cos` and `sin` are the reference's tables already cast to `T` (`[tokens, c]` each:
//! `concatenate([cos a, cos a]).astype(T)`), as `layers::RopeTables` builds them with MLX.
//! No step fuses: the products round to `T` before the sum, so there is no FMA.
//!
//! [`rope_scalar`] is that sequence element by element (the definition of the bits);
//! [`rope`] and [`rope_in_place`] give the same bits over all cores, 8 channels per AVX2
//! vector (4 per NEON vector) where available.

use crate::cpu::Isa;
use crate::{Error, Float, Result, parallel, rows};

const KERNEL: &str = "rope";

/// The rotation of one partition of a head: its `cos` and `sin` tables, `[tokens, channels]`
/// row-major in the dtype of the values they rotate (`channels` even and positive). A view of
/// one partition of the MLX-built `layers::RopeTables` (which holds every partition, as arrays).
#[derive(Debug, Clone, Copy)]
pub struct RopePartition<'a, T> {
    cos: &'a [T],
    sin: &'a [T],
    channels: usize,
}

impl<'a, T: Float> RopePartition<'a, T> {
    /// Tables of `channels` per token. Fails with [`Error::Shape`] if `channels` is 0 or odd,
    /// the two tables differ in length, or `channels` does not divide it.
    pub fn new(cos: &'a [T], sin: &'a [T], channels: usize) -> Result<RopePartition<'a, T>> {
        if channels == 0 || !channels.is_multiple_of(2) {
            return Err(Error::shape(KERNEL, format!("a partition of {channels} channels (must be even, > 0)")));
        }
        if cos.len() != sin.len() || !cos.len().is_multiple_of(channels) {
            return Err(Error::shape(
                KERNEL,
                format!("cos of {} and sin of {} values are not rows of {channels}", cos.len(), sin.len()),
            ));
        }
        Ok(RopePartition { cos, sin, channels })
    }
}

impl<T> RopePartition<'_, T> {
    /// Channels per token.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Tokens (rows) the tables hold.
    pub fn tokens(&self) -> usize {
        self.cos.len() / self.channels
    }
}

/// `apply_multidimensional_rope` of `x` `[tokens, heads, head_dim]` (token-major: the
/// reference's `[B, L, N, D]` with `tokens = B·L`) into `out` (same shape): partition `d` of
/// every head of token `t` is rotated by row `t` of `parts[d]`, the partitions laid out one
/// after another along the head. MLX 0.32's CPU bits (float32, bf16), infinities included; a
/// NaN gives NaN (in float32 the sign of a NaN may differ, as MLX's own is the compiler's).
///
/// Fails with [`Error::Shape`] if the partitions' channels do not add up to `head_dim`, a
/// table does not have `tokens` rows, or `x` and `out` are not `[tokens, heads, head_dim]`.
pub fn rope<T: Float>(x: &[T], heads: usize, head_dim: usize, parts: &[RopePartition<T>], out: &mut [T]) -> Result<()> {
    check(x.len(), out.len(), heads, head_dim, parts)?;
    out.copy_from_slice(x);
    rotate_all(out, heads, head_dim, parts);
    Ok(())
}

/// [`rope`] in place.
pub fn rope_in_place<T: Float>(x: &mut [T], heads: usize, head_dim: usize, parts: &[RopePartition<T>]) -> Result<()> {
    check(x.len(), x.len(), heads, head_dim, parts)?;
    rotate_all(x, heads, head_dim, parts);
    Ok(())
}

/// [`rope`] computed as the op sequence reads, one element at a time on this thread: the
/// definition of the bits. Same arguments and errors.
pub fn rope_scalar<T: Float>(
    x: &[T],
    heads: usize,
    head_dim: usize,
    parts: &[RopePartition<T>],
    out: &mut [T],
) -> Result<()> {
    check(x.len(), out.len(), heads, head_dim, parts)?;
    out.copy_from_slice(x);
    for (row, head) in out.chunks_exact_mut(head_dim).enumerate() {
        rotate_head_portable(head, row / heads, parts);
    }
    Ok(())
}

/// Checks the extents; returns nothing, the kernels derive `tokens` from the lengths.
pub(crate) fn check<T>(
    input: usize,
    output: usize,
    heads: usize,
    head_dim: usize,
    parts: &[RopePartition<T>],
) -> Result<()> {
    let width = heads.checked_mul(head_dim).unwrap_or(0);
    let heads_rows = rows::rows(KERNEL, input, output, width)?;
    let channels: usize = parts.iter().map(|p| p.channels).sum();
    if parts.is_empty() || channels != head_dim {
        return Err(Error::shape(KERNEL, format!("partitions of {channels} channels in all for heads of {head_dim}")));
    }
    if let Some(p) = parts.iter().find(|p| p.tokens() != heads_rows) {
        return Err(Error::shape(KERNEL, format!("tables of {} tokens for {heads_rows} tokens", p.tokens())));
    }
    Ok(())
}

/// Every head of `x` (checked extents), over all cores.
fn rotate_all<T: Float>(x: &mut [T], heads: usize, head_dim: usize, parts: &[RopePartition<T>]) {
    let isa = crate::cpu::isa();
    parallel::for_row_blocks(x, head_dim, rows::min_rows(head_dim), |first, block| {
        for (i, head) in block.chunks_exact_mut(head_dim).enumerate() {
            rotate_head(isa, head, (first + i) / heads, parts);
        }
    });
}

/// Rotates one head of token `token` in place (extents checked by the caller), by the
/// fastest path the CPU has.
#[inline]
pub(crate) fn rotate_head<T: Float>(isa: Isa, head: &mut [T], token: usize, parts: &[RopePartition<T>]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = isa.avx2() {
        avx2::rotate_head(avx2, head, token, parts);
        return;
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(neon) = isa.neon() {
        neon::rotate_head(neon, head, token, parts);
        return;
    }
    let _ = isa;
    rotate_head_portable(head, token, parts);
}

/// The partitions of one head of token `token` (extents checked by the caller), one after
/// another along the head: each one's channels of `head` and its tables' row for the token,
/// `cos` and `sin`, all three of the partition's width.
#[inline(always)]
fn partitions<'h, T>(
    head: &'h mut [T],
    token: usize,
    parts: &'h [RopePartition<'_, T>],
) -> impl Iterator<Item = (&'h mut [T], &'h [T], &'h [T])> {
    let mut rest = head;
    parts.iter().map(move |part| {
        let c = part.channels;
        let (u, tail) = std::mem::take(&mut rest).split_at_mut(c);
        rest = tail;
        let row = token * c..(token + 1) * c;
        (u, &part.cos[row.clone()], &part.sin[row])
    })
}

/// One head, element by element.
fn rotate_head_portable<T: Float>(head: &mut [T], token: usize, parts: &[RopePartition<T>]) {
    for (u, cos, sin) in partitions(head, token, parts) {
        let half = u.len() / 2;
        for j in 0..half {
            (u[j], u[j + half]) = rotate_pair(u[j], u[j + half], [cos[j], cos[j + half]], [sin[j], sin[j + half]]);
        }
    }
}

/// Channels `j` and `j + h` of a partition: `a = u[j]`, `b = u[j + h]`:
/// `T(T(a·cos_j) + T(T(−b)·sin_j))` and `T(T(b·cos_{j+h}) + T(a·sin_{j+h}))`.
#[inline(always)]
fn rotate_pair<T: Float>(a: T, b: T, cos: [T; 2], sin: [T; 2]) -> (T, T) {
    let (fa, fb) = (a.to_f32(), b.to_f32());
    let minus_b = T::from_f32(-fb).to_f32();
    let low = T::from_f32(T::from_f32(fa * cos[0].to_f32()).to_f32() + T::from_f32(minus_b * sin[0].to_f32()).to_f32());
    let high = T::from_f32(T::from_f32(fb * cos[1].to_f32()).to_f32() + T::from_f32(fa * sin[1].to_f32()).to_f32());
    (low, high)
}

crate::simd::stamp! {
    lanes v for Avx2, Neon;

    /// One head: each partition's low and high halves `LANES` channels at a time, each product
    /// rounded to `T` before the add (a multiply, then an add), as the scalar pair.
    entry fn rotate_head[T: Float](head: &mut [T], token: usize, parts: &[RopePartition<T>]) {
        for (u, cos, sin) in partitions(head, token, parts) {
            let half = u.len() / 2;
            let mut j = 0;
            while j + v::LANES <= half {
                // Channels `j..j + LANES` and `j + half..j + half + LANES` are in `u`, `cos` and
                // `sin` (each of the partition's `2·half` values).
                let a = v::load_at(u, j);
                let b = v::load_at(u, j + half);
                let (cos_low, cos_high) = (v::load_at(cos, j), v::load_at(cos, j + half));
                let (sin_low, sin_high) = (v::load_at(sin, j), v::load_at(sin, j + half));
                let minus_b = v::round::<T>(v::neg(b));
                let low = v::add(v::round::<T>(v::mul(a, cos_low)), v::round::<T>(v::mul(minus_b, sin_low)));
                let high = v::add(v::round::<T>(v::mul(b, cos_high)), v::round::<T>(v::mul(a, sin_high)));
                v::store_at(u, j, low);
                v::store_at(u, j + half, high);
                j += v::LANES;
            }
            for j in j..half {
                (u[j], u[j + half]) = rotate_pair(u[j], u[j + half], [cos[j], cos[j + half]], [sin[j], sin[j + half]]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{bits, floats};
    use half::bf16;
    use proptest::prelude::*;

    /// Tables as the reference builds them (angles `pos / 100^(2j/c)`), cast to `T`.
    fn tables<T: Float>(tokens: usize, channels: usize, axis: usize) -> (Vec<T>, Vec<T>) {
        let half = channels / 2;
        let (mut cos, mut sin) = (Vec::new(), Vec::new());
        for t in 0..tokens {
            let position = if axis == 0 { t % 7 } else { t / 7 } as f32;
            for k in 0..channels {
                let a = position / 100f32.powf(2.0 * (k % half) as f32 / channels as f32);
                cos.push(T::from_f32(a.cos()));
                sin.push(T::from_f32(a.sin()));
            }
        }
        (cos, sin)
    }

    fn check_paths<T: Float>(x: &[T], heads: usize, head_dim: usize, parts: &[RopePartition<T>]) {
        let mut want = vec![T::default(); x.len()];
        rope_scalar(x, heads, head_dim, parts, &mut want).unwrap();
        let mut got = vec![T::default(); x.len()];
        rope(x, heads, head_dim, parts, &mut got).unwrap();
        assert_eq!(bits(&got), bits(&want));
        let mut in_place = x.to_vec();
        rope_in_place(&mut in_place, heads, head_dim, parts).unwrap();
        assert_eq!(bits(&in_place), bits(&want));
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = crate::cpu::isa().avx2() {
            let mut lanes = x.to_vec();
            for (row, head) in lanes.chunks_exact_mut(head_dim).enumerate() {
                avx2::rotate_head(avx2, head, row / heads, parts);
            }
            assert_eq!(bits(&lanes), bits(&want), "avx2");
        }
        #[cfg(target_arch = "aarch64")]
        if let Some(neon) = crate::cpu::isa().neon() {
            let mut lanes = x.to_vec();
            for (row, head) in lanes.chunks_exact_mut(head_dim).enumerate() {
                neon::rotate_head(neon, head, row / heads, parts);
            }
            assert_eq!(bits(&lanes), bits(&want), "neon");
        }
    }

    #[test]
    fn rejects_bad_extents() {
        let (cos, sin) = tables::<f32>(3, 4, 0);
        let part = RopePartition::new(&cos, &sin, 4).unwrap();
        assert!(RopePartition::new(&cos, &sin, 3).is_err());
        assert!(RopePartition::new(&cos, &sin[1..], 4).is_err());
        assert!(RopePartition::new(&cos, &sin, 0).is_err());
        let x = [1f32; 3 * 2 * 8];
        let mut out = [0f32; 3 * 2 * 8];
        rope(&x, 2, 8, &[part, part], &mut out).unwrap();
        assert!(matches!(rope(&x, 2, 8, &[part], &mut out), Err(Error::Shape { .. })));
        assert!(matches!(rope(&x, 3, 8, &[part, part], &mut out), Err(Error::Shape { .. })));
        assert!(matches!(rope(&x, 2, 8, &[part, part], &mut out[1..]), Err(Error::Shape { .. })));
        assert!(matches!(rope(&x, 0, 8, &[part, part], &mut out), Err(Error::Shape { .. })));
        assert!(matches!(rope::<f32>(&x, 2, 8, &[], &mut out), Err(Error::Shape { .. })));
    }

    #[test]
    fn rotates_pairs_by_the_angle() {
        // One token, one head of one partition of 2: (a, b) -> (a cos − b sin, b cos + a sin).
        let (cos, sin) = ([0.0f32, 0.0], [1.0f32, 1.0]);
        let part = RopePartition::new(&cos, &sin, 2).unwrap();
        let mut out = [0f32; 2];
        rope(&[3.0, 5.0], 1, 2, &[part], &mut out).unwrap();
        assert_eq!(out, [-5.0, 3.0]);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn paths_agree(
            tokens in 1usize..30,
            heads in 1usize..5,
            (head_dim, axes) in prop::sample::select(vec![(64usize, 2usize), (72, 2), (8, 2), (2, 1), (36, 1), (64, 1), (24, 3)]),
            values in prop::collection::vec(floats((8, -8.0..8.0),
                vec![0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e38, 1e-40]), 61),
        ) {
            let c = head_dim / axes;
            let x: Vec<f32> = (0..tokens * heads * head_dim).map(|i| values[i % values.len()]).collect();
            let f32_tables: Vec<(Vec<f32>, Vec<f32>)> = (0..axes).map(|d| tables(tokens, c, d)).collect();
            let parts: Vec<RopePartition<f32>> = f32_tables.iter().map(|(cs, sn)| RopePartition::new(cs, sn, c).unwrap()).collect();
            check_paths(&x, heads, head_dim, &parts);
            let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
            let b_tables: Vec<(Vec<bf16>, Vec<bf16>)> = (0..axes).map(|d| tables(tokens, c, d)).collect();
            let parts: Vec<RopePartition<bf16>> = b_tables.iter().map(|(cs, sn)| RopePartition::new(cs, sn, c).unwrap()).collect();
            check_paths(&xb, heads, head_dim, &parts);
        }
    }
}
