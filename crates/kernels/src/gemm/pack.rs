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

/// k values packed at a time by the column-gather loop of [`pack_b_panel`] (keeps the
/// destination chunk in L1 while `NR` source columns stream in).
const K_CHUNK: usize = 128;

/// Packs rows `i0..i0 + mc`, k `p0..p0 + kc` of `a` into `dst` (`⌈mc / MR⌉ · kc · MR` values).
pub(crate) fn pack_a<A: Float, O: Float>(
    a: &MatRef<'_, A>,
    clip: Option<(f32, f32)>,
    (i0, mc): (usize, usize),
    (p0, kc): (usize, usize),
    dst: &mut [f32],
) {
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
/// With `simd`, a full panel of a column-contiguous `b` is transposed 8 × 8 at a time with
/// AVX2 where the CPU has it (the same values).
pub(crate) fn pack_b_panel<B: Float, O: Float>(b: &MatRef<'_, B>, j0: usize, cols: usize, dst: &mut [f32], simd: bool) {
    let k_len = b.rows();
    if cols < NR {
        dst.fill(0.0);
    }
    #[cfg(target_arch = "x86_64")]
    if simd && cols == NR && b.row_stride() == 1 && crate::cpu::has_avx2_fma() {
        let columns: [&[B]; NR] = std::array::from_fn(|c| {
            let start = (j0 + c) * b.col_stride();
            &b.data()[start..start + k_len]
        });
        // SAFETY: AVX2 and FMA are available (checked above).
        unsafe { avx2::pack_columns::<B, O>(&columns, &mut dst[..k_len * NR]) };
        return;
    }
    let _ = simd;
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

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{NR, operand};
    use crate::Float;
    use crate::lanes::{load8, round8, transpose8};
    use std::arch::x86_64::*;

    /// `dst[k · NR + c] = operand(columns[c][k])` for every k: a full panel, 8 columns × 8 k
    /// per transpose, the k past the last multiple of 8 one by one.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn pack_columns<B: Float, O: Float>(columns: &[&[B]; NR], dst: &mut [f32]) {
        let k_len = dst.len() / NR;
        let full = k_len / 8 * 8;
        for k0 in (0..full).step_by(8) {
            for group in 0..NR / 8 {
                let mut rows = [_mm256_setzero_ps(); 8];
                for (c, row) in rows.iter_mut().enumerate() {
                    let src = &columns[group * 8 + c][k0..k0 + 8];
                    // SAFETY: `src` holds 8 values.
                    *row = round8::<O>(unsafe { load8::<B>(src.as_ptr()) });
                }
                for (i, v) in transpose8(rows).into_iter().enumerate() {
                    let out = &mut dst[(k0 + i) * NR + group * 8..(k0 + i) * NR + group * 8 + 8];
                    // SAFETY: `out` holds 8 floats.
                    unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
                }
            }
        }
        for k in full..k_len {
            for (c, column) in columns.iter().enumerate() {
                dst[k * NR + c] = operand::<B, O>(column[k], None);
            }
        }
    }
}
