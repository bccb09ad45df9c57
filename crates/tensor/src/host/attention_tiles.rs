//! Register-tiled AVX2 + FMA products for [`super::attention`]: a block of query rows against
//! one head's keys (`s = q kᵀ`) and its softmax weights against that head's values
//! (`o = p v`), in tiles of [`ROW_TILE`] rows × 16 columns held in twelve vector registers.
//!
//! Measured against the BLAS's small-dimension kernels on one block of 120 query rows, 12
//! heads, 2394 keys and head dimension 64, both cores busy: `q kᵀ` 87–91 against 78–80
//! GFLOP/s per core, `p v` 82–84 against 69–72.

/// Rows of a tile: query rows are processed six at a time (callers pad blocks to a multiple).
pub(crate) const ROW_TILE: usize = 6;
/// Keys per packed key tile: the columns of one score tile.
pub(crate) const KEY_TILE: usize = 16;
/// Keys per pass of `p v`: a 6-row strip of weights (2.3 KB) and the pass's values (24 KB at
/// head dimension 64) stay in the 32 KB L1 cache across the value tiles (64–128 measured
/// within 5% of one another; the whole row at once 30% slower).
const VALUE_BLOCK: usize = 96;

/// Whether the tiled products serve head dimension `head_dim` on this CPU: AVX2 and FMA, and
/// `head_dim` a positive multiple of 8 (the value tiles are 16 or 8 columns wide).
pub(crate) fn available(head_dim: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        head_dim > 0
            && head_dim.is_multiple_of(8)
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = head_dim;
        false
    }
}

/// The number of key tiles covering `keys` keys (the last one zero-padded).
pub(crate) fn key_tiles(keys: usize) -> usize {
    keys.div_ceil(KEY_TILE)
}

/// One head's keys `[keys, head_dim]` (row `t` at `key(t)`) packed as
/// `[key_tiles, head_dim, KEY_TILE]` into `packed`: tile `j`, channel `c` holds
/// `k[16j..16j + 16][c]`, zero past the last key. `packed` must hold
/// `key_tiles(keys) · head_dim · KEY_TILE` values.
pub(crate) fn pack_keys<'a>(keys: usize, head_dim: usize, key: impl Fn(usize) -> &'a [f32], packed: &mut [f32]) {
    let tile_len = head_dim * KEY_TILE;
    for (j, tile) in packed.chunks_exact_mut(tile_len).enumerate() {
        tile.fill(0.0);
        for (i, t) in (j * KEY_TILE..keys.min((j + 1) * KEY_TILE)).enumerate() {
            for (c, &value) in key(t)[..head_dim].iter().enumerate() {
                tile[c * KEY_TILE + i] = value;
            }
        }
    }
}

/// `s = q kᵀ` for `rows` query rows `q` (`[rows, head_dim]`, `rows` a multiple of
/// [`ROW_TILE`]) against keys packed by [`pack_keys`] (`tiles` key tiles): row `r` of `s`
/// (row stride `s_stride ≥ 16 · tiles`) gets `tiles · 16` scores, the padded keys' 0.
///
/// Panics if a buffer is shorter than these extents need, `head_dim` is not a multiple of 8
/// or the CPU lacks AVX2 and FMA (callers check [`available`]).
#[cfg(target_arch = "x86_64")]
pub(crate) fn scores(
    q: &[f32],
    rows: usize,
    head_dim: usize,
    packed: &[f32],
    tiles: usize,
    s: &mut [f32],
    s_stride: usize,
) {
    assert!(available(head_dim), "AVX2 and FMA, head dimension a multiple of 8");
    assert!(rows.is_multiple_of(ROW_TILE) && q.len() >= rows * head_dim);
    assert!(packed.len() >= tiles * head_dim * KEY_TILE && s_stride >= tiles * KEY_TILE);
    assert!(rows == 0 || s.len() >= (rows - 1) * s_stride + tiles * KEY_TILE);
    // SAFETY: AVX2 and FMA are present, and every buffer holds what the loops index (checked
    // just above).
    unsafe { avx2::scores(q, rows, head_dim, packed, tiles, s, s_stride) }
}

/// `out = p v` for `rows` rows of weights `p` (row stride `p_stride`, `keys` used per row;
/// `rows` a multiple of [`ROW_TILE`]) and values `v` (`[keys, head_dim]`); `out` is
/// `[rows, head_dim]`, overwritten.
///
/// Panics if a buffer is shorter than these extents need, `head_dim` is not a multiple of 8
/// or the CPU lacks AVX2 and FMA (callers check [`available`]).
#[cfg(target_arch = "x86_64")]
pub(crate) fn weighted_sum(
    p: &[f32],
    p_stride: usize,
    rows: usize,
    keys: usize,
    v: &[f32],
    head_dim: usize,
    out: &mut [f32],
) {
    assert!(available(head_dim), "AVX2 and FMA, head dimension a multiple of 8");
    assert!(rows.is_multiple_of(ROW_TILE) && p_stride >= keys && v.len() >= keys * head_dim);
    assert!(rows == 0 || p.len() >= (rows - 1) * p_stride + keys);
    assert!(out.len() >= rows * head_dim);
    // SAFETY: AVX2 and FMA are present, and every buffer holds what the loops index (checked
    // just above).
    unsafe { avx2::weighted_sum(p, p_stride, rows, keys, v, head_dim, out) }
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn scores(_: &[f32], _: usize, _: usize, _: &[f32], _: usize, _: &mut [f32], _: usize) {
    unreachable!("`available` is false off x86-64");
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn weighted_sum(_: &[f32], _: usize, _: usize, _: usize, _: &[f32], _: usize, _: &mut [f32]) {
    unreachable!("`available` is false off x86-64");
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{KEY_TILE, ROW_TILE, VALUE_BLOCK};
    use std::arch::x86_64::*;

    /// See [`super::scores`]; the caller has checked the CPU and the extents.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn scores(
        q: &[f32],
        rows: usize,
        d: usize,
        packed: &[f32],
        tiles: usize,
        s: &mut [f32],
        s_stride: usize,
    ) {
        // Key tiles outside, row tiles inside: one key tile (d × 16 floats) stays in L1 while
        // every row tile of the block passes over it.
        for j in 0..tiles {
            for r0 in (0..rows).step_by(ROW_TILE) {
                let mut acc = [[_mm256_setzero_ps(); 2]; ROW_TILE];
                // SAFETY: rows r0..r0 + 6 of q (d values each), tile j of the packed keys
                // (d × 16 values) and columns 16j..16j + 16 of rows r0..r0 + 6 of s are in
                // bounds (the caller's contract).
                unsafe {
                    let qp = q.as_ptr().add(r0 * d);
                    let kp = packed.as_ptr().add(j * d * KEY_TILE);
                    for c in 0..d {
                        let b0 = _mm256_loadu_ps(kp.add(c * KEY_TILE));
                        let b1 = _mm256_loadu_ps(kp.add(c * KEY_TILE + 8));
                        for (r, acc) in acc.iter_mut().enumerate() {
                            let a = _mm256_broadcast_ss(&*qp.add(r * d + c));
                            acc[0] = _mm256_fmadd_ps(a, b0, acc[0]);
                            acc[1] = _mm256_fmadd_ps(a, b1, acc[1]);
                        }
                    }
                    let sp = s.as_mut_ptr().add(r0 * s_stride + j * KEY_TILE);
                    for (r, acc) in acc.iter().enumerate() {
                        _mm256_storeu_ps(sp.add(r * s_stride), acc[0]);
                        _mm256_storeu_ps(sp.add(r * s_stride + 8), acc[1]);
                    }
                }
            }
        }
    }

    /// See [`super::weighted_sum`]; the caller has checked the CPU and the extents.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn weighted_sum(
        p: &[f32],
        p_stride: usize,
        rows: usize,
        keys: usize,
        v: &[f32],
        d: usize,
        out: &mut [f32],
    ) {
        out[..rows * d].fill(0.0);
        for k0 in (0..keys).step_by(VALUE_BLOCK) {
            let block = VALUE_BLOCK.min(keys - k0);
            for c0 in (0..d).step_by(16) {
                for r0 in (0..rows).step_by(ROW_TILE) {
                    // SAFETY: rows r0..r0 + 6 of p (keys k0..k0 + block), rows k0..k0 + block of
                    // v and rows r0..r0 + 6 of out (columns c0..c0 + 16, or + 8 at the end) are
                    // in bounds (the caller's contract).
                    unsafe {
                        let (pp, vp) = (p.as_ptr().add(r0 * p_stride + k0), v.as_ptr().add(k0 * d + c0));
                        let op = out.as_mut_ptr().add(r0 * d + c0);
                        if c0 + 16 <= d {
                            weighted_sum_tile::<2>(pp, p_stride, block, vp, d, op);
                        } else {
                            weighted_sum_tile::<1>(pp, p_stride, block, vp, d, op);
                        }
                    }
                }
            }
        }
    }

    /// `out[r][..8N] += Σₖ p[r][k] · v[k][..8N]` for six rows `r` and `keys` keys `k`; rows of
    /// `p` are `p_stride` apart, rows of `v` and `out` `d` apart.
    ///
    /// # Safety
    /// AVX2 and FMA are present and every pointer addresses the values indexed.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn weighted_sum_tile<const N: usize>(
        p: *const f32,
        p_stride: usize,
        keys: usize,
        v: *const f32,
        d: usize,
        out: *mut f32,
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            let mut acc = [[_mm256_setzero_ps(); N]; ROW_TILE];
            for (r, acc) in acc.iter_mut().enumerate() {
                for (n, acc) in acc.iter_mut().enumerate() {
                    *acc = _mm256_loadu_ps(out.add(r * d + 8 * n));
                }
            }
            for k in 0..keys {
                let mut b = [_mm256_setzero_ps(); N];
                for (n, b) in b.iter_mut().enumerate() {
                    *b = _mm256_loadu_ps(v.add(k * d + 8 * n));
                }
                for (r, acc) in acc.iter_mut().enumerate() {
                    let a = _mm256_broadcast_ss(&*p.add(r * p_stride + k));
                    for (acc, b) in acc.iter_mut().zip(&b) {
                        *acc = _mm256_fmadd_ps(a, *b, *acc);
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                for (n, acc) in acc.iter().enumerate() {
                    _mm256_storeu_ps(out.add(r * d + 8 * n), *acc);
                }
            }
        }
    }
}
