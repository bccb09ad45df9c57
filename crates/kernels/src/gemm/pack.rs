//! Packing the operands into the micro-kernels' `f32` panels, converting and clipping once.
//!
//! - `a` rows `i0..i0 + mc`, k `p0..p0 + kc` become `⌈mc / MR⌉` micro-panels of `kc × MR`
//!   (k-major: `panel[k · MR + i]`), rows past `mc` zero.
//! - `b` columns `j0..j0 + nc`, all of k, become `⌈nc / NR⌉` panels of `K × NR`
//!   (`panel[k · NR + j]`), columns past `nc` zero; a k block `p0..` of a panel starts at
//!   `p0 · NR`.
//!
//! Each value goes through [`operand`]: `a`'s clip in its own dtype, the cast to the output
//! dtype `O`, the exact widening to `f32`.

use super::arithmetic::operand;
use super::matrix::MatRef;
use super::tile::{MR, NR};
use crate::Float;
use crate::cpu::Isa;

/// k values packed at a time by the column-gather loop of [`pack_b_panel`] (keeps the
/// destination chunk in L1 while `NR` source columns stream in).
const K_CHUNK: usize = 128;

/// Packs rows `i0..i0 + mc`, k `p0..p0 + kc` of `a` into `dst` (`⌈mc / MR⌉ · kc · MR` values),
/// full panels of row-major rows with AVX2 or NEON where `isa` has it (the same values).
pub(crate) fn pack_a<A: Float, O: Float>(
    isa: Isa,
    a: &MatRef<'_, A>,
    clip: Option<(f32, f32)>,
    (i0, mc): (usize, usize),
    (p0, kc): (usize, usize),
    dst: &mut [f32],
) {
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = isa;
    for (panel, out) in dst.chunks_exact_mut(kc * MR).take(mc.div_ceil(MR)).enumerate() {
        let first = i0 + panel * MR;
        let rows = (i0 + mc - first).min(MR);
        if rows < MR {
            out.fill(0.0);
        }
        if a.col_stride() == 1 && rows == MR {
            // Row-major rows, each contiguous along k: gather the panel's rows k by k.
            let row = |r: usize| {
                let start = (first + r) * a.row_stride() + p0;
                &a.data()[start..start + kc]
            };
            let src: [&[A]; MR] = std::array::from_fn(row);
            #[cfg(target_arch = "x86_64")]
            if let Some(avx2) = isa.avx2() {
                avx2::gather_rows::<A, O>(avx2, &src, out, clip);
                continue;
            }
            #[cfg(target_arch = "aarch64")]
            if let Some(neon) = isa.neon() {
                neon::gather_rows::<A, O>(neon, &src, out, clip);
                continue;
            }
            match clip {
                None => gather_rows::<A, O>(&src, out, None),
                Some(bounds) => gather_rows::<A, O>(&src, out, Some(bounds)),
            }
        } else if a.col_stride() == 1 {
            for r in 0..rows {
                let start = (first + r) * a.row_stride() + p0;
                let src = &a.data()[start..start + kc];
                for (k, &x) in src.iter().enumerate() {
                    out[k * MR + r] = operand::<A, O>(x, clip);
                }
            }
        } else if a.row_stride() == 1 {
            // Transposed: each k is contiguous along the rows.
            for k in 0..kc {
                let start = (p0 + k) * a.col_stride() + first;
                let src = &a.data()[start..start + rows];
                for (d, &x) in out[k * MR..k * MR + rows].iter_mut().zip(src) {
                    *d = operand::<A, O>(x, clip);
                }
            }
        } else {
            for r in 0..rows {
                for k in 0..kc {
                    out[k * MR + r] = operand::<A, O>(a.at(first + r, p0 + k), clip);
                }
            }
        }
    }
}

/// `out[k · MR + r] = src[r][k]` for a full panel of `MR` rows of equal length.
#[inline(always)]
fn gather_rows<A: Float, O: Float>(src: &[&[A]; MR], out: &mut [f32], clip: Option<(f32, f32)>) {
    let len = out.len() / MR;
    let src = src.map(|row| &row[..len]);
    for (k, dst) in out.chunks_exact_mut(MR).enumerate() {
        for (d, row) in dst.iter_mut().zip(src) {
            *d = operand::<A, O>(row[k], clip);
        }
    }
}

/// Packs columns `j0..j0 + cols` (`cols ≤ NR`) of `b`, all of k, into one panel `dst`
/// (`K · NR` values).
/// A full panel of a column-contiguous `b` is transposed 8 × 8 at a time with AVX2 (4 × 4 with
/// NEON) where `isa` has it (the same values).
pub(crate) fn pack_b_panel<B: Float, O: Float>(b: &MatRef<'_, B>, j0: usize, cols: usize, dst: &mut [f32], isa: Isa) {
    let k_len = b.rows();
    if cols < NR {
        dst.fill(0.0);
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = isa.avx2().filter(|_| cols == NR && b.row_stride() == 1) {
        let columns: [&[B]; NR] = std::array::from_fn(|c| {
            let start = (j0 + c) * b.col_stride();
            &b.data()[start..start + k_len]
        });
        avx2::pack_columns::<B, O>(avx2, &columns, &mut dst[..k_len * NR]);
        return;
    }
    #[cfg(target_arch = "aarch64")]
    if let Some(neon) = isa.neon().filter(|_| cols == NR && b.row_stride() == 1) {
        let columns: [&[B]; NR] = std::array::from_fn(|c| {
            let start = (j0 + c) * b.col_stride();
            &b.data()[start..start + k_len]
        });
        neon::pack_columns::<B, O>(neon, &columns, &mut dst[..k_len * NR]);
        return;
    }
    let _ = isa;
    if b.col_stride() == 1 {
        // Row-major: row k holds the panel's columns contiguously.
        for (k, out) in dst.chunks_exact_mut(NR).take(k_len).enumerate() {
            let start = k * b.row_stride() + j0;
            let src = &b.data()[start..start + cols];
            for (d, &x) in out.iter_mut().zip(src) {
                *d = operand::<B, O>(x, None);
            }
        }
    } else if b.row_stride() == 1 {
        // Column-contiguous (`W.T`): each column is contiguous along k; gather in k chunks.
        for k0 in (0..k_len).step_by(K_CHUNK) {
            let len = K_CHUNK.min(k_len - k0);
            let out = &mut dst[k0 * NR..(k0 + len) * NR];
            for c in 0..cols {
                let start = (j0 + c) * b.col_stride() + k0;
                let src = &b.data()[start..start + len];
                for (k, &x) in src.iter().enumerate() {
                    out[k * NR + c] = operand::<B, O>(x, None);
                }
            }
        }
    } else {
        for k in 0..k_len {
            for c in 0..cols {
                dst[k * NR + c] = operand::<B, O>(b.at(k, j0 + c), None);
            }
        }
    }
}

crate::simd::stamp! {
    lanes v for Avx2, Neon;

    /// `dst[k · NR + c] = operand(columns[c][k])` for every k: a full panel, `LANES` columns ×
    /// `LANES` k per transpose, the k past the last multiple of `LANES` one by one.
    entry fn pack_columns[B: Float, O: Float](columns: &[&[B]; NR], dst: &mut [f32]) {
        let k_len = dst.len() / NR;
        let full = k_len / v::LANES * v::LANES;
        for k0 in (0..full).step_by(v::LANES) {
            for group in 0..NR / v::LANES {
                let first = group * v::LANES;
                let rows = std::array::from_fn(|c| v::round::<O>(v::load_at(columns[first + c], k0)));
                for (i, lanes) in v::transpose(rows).into_iter().enumerate() {
                    v::store_at(dst, (k0 + i) * NR + first, lanes);
                }
            }
        }
        for k in full..k_len {
            for (c, column) in columns.iter().enumerate() {
                dst[k * NR + c] = operand::<B, O>(column[k], None);
            }
        }
    }

    only Avx2 {
        use std::arch::x86_64::*;

        /// [`super::gather_rows`] 8 k at a time: the `MR` rows' 8 values (clipped, cast to `O`,
        /// widened: [`operand`]) transposed 8 × 8 with two rows of zeros, each k's `MR` values
        /// stored by an 8-lane store whose last 2 lanes the next k's store overwrites (the last
        /// k of each 8 stored as 4 + 2 lanes); the k past the last multiple of 8 one by one.
        entry fn gather_rows[A: Float, O: Float](src: &[&[A]; MR], out: &mut [f32], clip: Option<(f32, f32)>) {
            const _: () = assert!(MR == 6);
            let len = out.len() / MR;
            let src = src.map(|row| &row[..len]);
            let full = len / 8 * 8;
            for k0 in (0..full).step_by(8) {
                let mut rows = [_mm256_setzero_ps(); 8];
                for (row, values) in rows.iter_mut().zip(src) {
                    let values = &values[k0..k0 + 8];
                    // SAFETY: `values` holds 8 values.
                    let x = unsafe { v::load::<A>(values.as_ptr()) };
                    *row = v::round::<O>(match clip {
                        Some(bounds) => v::clip(x, bounds),
                        None => x,
                    });
                }
                let columns = v::transpose(rows);
                let chunk = &mut out[k0 * MR..(k0 + 8) * MR];
                for (i, column) in columns.iter().enumerate().take(7) {
                    let dst = &mut chunk[i * MR..i * MR + 8];
                    // SAFETY: `dst` holds 8 floats (the 2 past this k's `MR` belong to the next k,
                    // which is stored after).
                    unsafe { _mm256_storeu_ps(dst.as_mut_ptr(), *column) };
                }
                let last = &mut chunk[7 * MR..8 * MR];
                // SAFETY: `last` holds 6 floats: 4 from the low half, 2 from the high half.
                unsafe {
                    _mm_storeu_ps(last.as_mut_ptr(), _mm256_castps256_ps128(columns[7]));
                    let high = _mm_castps_si128(_mm256_extractf128_ps::<1>(columns[7]));
                    _mm_storel_epi64(last.as_mut_ptr().add(4).cast(), high);
                }
            }
            for k in full..len {
                for (d, row) in out[k * MR..(k + 1) * MR].iter_mut().zip(src) {
                    *d = operand::<A, O>(row[k], clip);
                }
            }
        }
    }

    only Neon {
        use std::arch::aarch64::*;

        /// [`super::gather_rows`] 4 k at a time: the `MR` rows' 4 values (clipped, cast to `O`,
        /// widened: [`operand`]), rows 0..4 transposed 4 × 4 and rows 4, 5 interleaved in pairs,
        /// each k's `MR` values stored as 4 + 2 lanes; the k past the last multiple of 4 one by one.
        entry fn gather_rows[A: Float, O: Float](src: &[&[A]; MR], out: &mut [f32], clip: Option<(f32, f32)>) {
            const _: () = assert!(MR == 6);
            let len = out.len() / MR;
            let src = src.map(|row| &row[..len]);
            let full = len / 4 * 4;
            for k0 in (0..full).step_by(4) {
                let mut rows = [vdupq_n_f32(0.0); MR];
                for (row, values) in rows.iter_mut().zip(src) {
                    let x = v::load_at(values, k0);
                    *row = v::round::<O>(match clip {
                        Some(bounds) => v::clip(x, bounds),
                        None => x,
                    });
                }
                let columns = v::transpose([rows[0], rows[1], rows[2], rows[3]]);
                // (rows[4][k], rows[5][k]) for k = 0, 1, then for k = 2, 3.
                let pairs = [vzip1q_f32(rows[4], rows[5]), vzip2q_f32(rows[4], rows[5])];
                let chunk = &mut out[k0 * MR..(k0 + 4) * MR];
                for (k, column) in columns.into_iter().enumerate() {
                    let dst = &mut chunk[k * MR..(k + 1) * MR];
                    let pair = if k % 2 == 0 { vget_low_f32(pairs[k / 2]) } else { vget_high_f32(pairs[k / 2]) };
                    // SAFETY: `dst` holds `MR` = 6 floats: 4 from the column, 2 from the pair.
                    unsafe {
                        vst1q_f32(dst.as_mut_ptr(), column);
                        vst1_f32(dst.as_mut_ptr().add(4), pair);
                    }
                }
            }
            for k in full..len {
                for (d, row) in out[k * MR..(k + 1) * MR].iter_mut().zip(src) {
                    *d = operand::<A, O>(row[k], clip);
                }
            }
        }
    }
}
