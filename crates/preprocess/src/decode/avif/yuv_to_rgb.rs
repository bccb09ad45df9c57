//! YUV to RGB8 as libavif 1.4.2's `avifImageYUVToRGB` does it for Pillow (8-bit output,
//! automatic chroma upsampling) when it hands the work to libyuv (revision 1924): the matrices
//! libyuv has constants for, 4:4:4 per pixel, 4:2:2 and 4:2:0 with libyuv's bilinear chroma
//! upsampling (`I4xxToRGB24MatrixFilter` / `I4xxAlphaToARGBMatrixFilter` with `kFilterBilinear`).
//! The arithmetic is libyuv's C reference (`YuvPixel`), which its x86 SIMD rows match.

use super::av1::{Frame, Layout, Plane};
use crate::{Error, Result};

/// libyuv's `YuvConstants` for one matrix and range: the U/V contributions (`UB`, `UG`, `VG`,
/// `VR`, in 1/64) and the Y scale and bias (`YG`, `YB`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct YuvConstants {
    ub: i32,
    ug: i32,
    vg: i32,
    vr: i32,
    yg: u32,
    yb: i32,
}

const fn constants(yg: u32, yb: i32, ub: i32, ug: i32, vg: i32, vr: i32) -> YuvConstants {
    YuvConstants { ub, ug, vg, vr, yg, yb }
}

/// `kYuvJPEGConstants`: BT.601 full range.
const JPEG: YuvConstants = constants(16320, 32, 113, 22, 46, 90);
/// `kYuvF709Constants`: BT.709 full range.
const F709: YuvConstants = constants(16320, 32, 119, 12, 30, 101);
/// `kYuvV2020Constants`: BT.2020 full range.
const V2020: YuvConstants = constants(16320, 32, 120, 11, 37, 94);
/// `kYuvI601Constants`: BT.601 limited range (`UB` capped at 128, libyuv's default build).
const I601: YuvConstants = constants(18997, -1160, 128, 25, 52, 102);
/// `kYuvH709Constants`: BT.709 limited range (`UB` capped at 128).
const H709: YuvConstants = constants(18997, -1160, 128, 14, 34, 115);
/// `kYuv2020Constants`: BT.2020 limited range (`UB` capped at 128).
const L2020: YuvConstants = constants(19003, -1160, 128, 12, 42, 107);

/// libavif's `getLibYUVConstants`: the constants for matrix coefficients `matrix` (with
/// `primaries` for the chroma-derived matrix) in full or limited range, or `None` where libyuv
/// has none and libavif falls back to its own conversion.
pub(super) fn libyuv_constants(matrix: u16, primaries: u16, full_range: bool) -> Option<YuvConstants> {
    // H.273 MatrixCoefficients: 1 BT.709, 2 unspecified, 5 BT.470BG, 6 BT.601, 9 BT.2020 NCL,
    // 12 chroma-derived NCL (its matrix from ColourPrimaries: 1 BT.709, 2 unspecified,
    // 5 BT.470BG, 6 BT.601, 9 BT.2020).
    enum Matrix {
        Bt709,
        Bt601,
        Bt2020,
    }
    let kind = match matrix {
        1 => Matrix::Bt709,
        2 | 5 | 6 => Matrix::Bt601,
        9 => Matrix::Bt2020,
        12 => match primaries {
            1 | 2 => Matrix::Bt709,
            5 | 6 => Matrix::Bt601,
            9 => Matrix::Bt2020,
            _ => return None,
        },
        _ => return None,
    };
    Some(match (kind, full_range) {
        (Matrix::Bt709, true) => F709,
        (Matrix::Bt601, true) => JPEG,
        (Matrix::Bt2020, true) => V2020,
        (Matrix::Bt709, false) => H709,
        (Matrix::Bt601, false) => I601,
        (Matrix::Bt2020, false) => L2020,
    })
}

/// libyuv's `YuvPixel`: one 8-bit Y, U, V to R, G, B.
#[inline]
fn yuv_pixel(y: u8, u: u8, v: u8, k: &YuvConstants) -> [u8; 3] {
    let y1 = ((u32::from(y) * 0x0101 * k.yg) >> 16) as i32 + k.yb;
    let ui = i32::from(u) - 128;
    let vi = i32::from(v) - 128;
    let clamp = |x: i32| (x >> 6).clamp(0, 255) as u8;
    [clamp(y1 + vi * k.vr), clamp(y1 - (ui * k.ug + vi * k.vg)), clamp(y1 + ui * k.ub)]
}

/// libyuv's `ScaleRowUp2_Linear_Any_*` on one chroma row to `width` samples: the first sample
/// copied, then 3:1 / 1:3 blends of neighbours, the last sample copied from its source.
fn up2_linear(src: &[u8], width: usize, out: &mut [u8]) {
    let at = |i: usize| src.get(i).or(src.last()).copied().unwrap_or(0);
    let Some(first) = out.first_mut() else { return };
    *first = at(0);
    let work = (width - 1) & !1;
    for x in 0..work / 2 {
        let (s0, s1) = (u16::from(at(x)), u16::from(at(x + 1)));
        out[2 * x + 1] = ((s0 * 3 + s1 + 2) >> 2) as u8;
        out[2 * x + 2] = ((s0 + s1 * 3 + 2) >> 2) as u8;
    }
    out[width - 1] = at((width - 1) / 2);
}

/// libyuv's `ScaleRowUp2_Bilinear_Any_*` on chroma rows `s` (above) and `t` (below) to the
/// two output rows `d` (nearer `s`) and `e` (nearer `t`), `width` samples each.
fn up2_bilinear(s: &[u8], t: &[u8], width: usize, d: &mut [u8], e: &mut [u8]) {
    let get = |row: &[u8], i: usize| u16::from(row.get(i).or(row.last()).copied().unwrap_or(0));
    if width == 0 {
        return;
    }
    d[0] = ((3 * get(s, 0) + get(t, 0) + 2) >> 2) as u8;
    e[0] = ((get(s, 0) + 3 * get(t, 0) + 2) >> 2) as u8;
    let work = (width - 1) & !1;
    for x in 0..work / 2 {
        let (s0, s1, t0, t1) = (get(s, x), get(s, x + 1), get(t, x), get(t, x + 1));
        d[2 * x + 1] = ((s0 * 9 + s1 * 3 + t0 * 3 + t1 + 8) >> 4) as u8;
        d[2 * x + 2] = ((s0 * 3 + s1 * 9 + t0 + t1 * 3 + 8) >> 4) as u8;
        e[2 * x + 1] = ((s0 * 3 + s1 + t0 * 9 + t1 * 3 + 8) >> 4) as u8;
        e[2 * x + 2] = ((s0 + s1 * 3 + t0 * 3 + t1 * 9 + 8) >> 4) as u8;
    }
    let last = (width - 1) / 2;
    d[width - 1] = ((3 * get(s, last) + get(t, last) + 2) >> 2) as u8;
    e[width - 1] = ((get(s, last) + 3 * get(t, last) + 2) >> 2) as u8;
}

/// Converts a 4:4:4, 4:2:2 or 4:2:0 frame without alpha to packed RGB8 with `k`; 10- and 12-bit
/// samples are first shifted down to 8 bits, as libavif does when libyuv has no high bit depth
/// conversion to RGB (it has none to 3-byte RGB).
pub(super) fn convert(frame: &Frame, k: &YuvConstants) -> Result<Vec<u8>> {
    let (width, height) = (frame.width as usize, frame.height as usize);
    let [y_plane, u_plane, v_plane] = frame.planes.as_slice() else {
        return Err(Error::unsupported("AVIF", "a frame without chroma planes"));
    };
    // libavif's `avifImageDownshiftTo8bpc` for 10 and 12 bits (libyuv's `Convert16To8Plane`
    // with scale 2^(24 - depth)); the identity for 8 bits.
    let scale = 1u32 << 24u32.saturating_sub(frame.depth).min(16);
    let narrow = |plane: &Plane| -> Vec<u8> {
        plane.samples.iter().map(|&s| ((u32::from(s) * scale) >> 16).min(255) as u8).collect()
    };
    let (y_samples, u_samples, v_samples) = (narrow(y_plane), narrow(u_plane), narrow(v_plane));
    let row = |samples: &'_ [u8], plane: &Plane, r: usize| -> Vec<u8> {
        let r = r.min(plane.height.saturating_sub(1));
        samples.get(r * plane.width..(r + 1) * plane.width).unwrap_or(&[]).to_vec()
    };
    let mut rgb = vec![0u8; width * height * 3];
    let mut emit = |out_row: usize, u_row: &[u8], v_row: &[u8]| {
        let y_row = row(&y_samples, y_plane, out_row);
        let dst = &mut rgb[out_row * width * 3..(out_row + 1) * width * 3];
        for (x, px) in dst.chunks_exact_mut(3).enumerate() {
            let y = y_row.get(x).copied().unwrap_or(0);
            let u = u_row.get(x).copied().unwrap_or(0);
            let v = v_row.get(x).copied().unwrap_or(0);
            px.copy_from_slice(&yuv_pixel(y, u, v, k));
        }
    };
    match frame.layout {
        Layout::Yuv444 => {
            for r in 0..height {
                emit(r, &row(&u_samples, u_plane, r), &row(&v_samples, v_plane, r));
            }
        }
        Layout::Yuv422 => {
            let (mut u_up, mut v_up) = (vec![0u8; width], vec![0u8; width]);
            for r in 0..height {
                up2_linear(&row(&u_samples, u_plane, r), width, &mut u_up);
                up2_linear(&row(&v_samples, v_plane, r), width, &mut v_up);
                emit(r, &u_up, &v_up);
            }
        }
        Layout::Yuv420 => {
            // I420ToRGB24MatrixBilinear: the first row from the first chroma row alone, then
            // pairs of rows between chroma rows c and c + 1, the last row (even heights) from
            // the last chroma row alone.
            let (mut u_a, mut v_a) = (vec![0u8; width], vec![0u8; width]);
            let (mut u_b, mut v_b) = (vec![0u8; width], vec![0u8; width]);
            up2_linear(&row(&u_samples, u_plane, 0), width, &mut u_a);
            up2_linear(&row(&v_samples, v_plane, 0), width, &mut v_a);
            emit(0, &u_a, &v_a);
            let mut chroma = 0;
            let mut out = 1;
            while out + 1 < height {
                let (us, ut) = (row(&u_samples, u_plane, chroma), row(&u_samples, u_plane, chroma + 1));
                let (vs, vt) = (row(&v_samples, v_plane, chroma), row(&v_samples, v_plane, chroma + 1));
                up2_bilinear(&us, &ut, width, &mut u_a, &mut u_b);
                up2_bilinear(&vs, &vt, width, &mut v_a, &mut v_b);
                emit(out, &u_a, &v_a);
                emit(out + 1, &u_b, &v_b);
                out += 2;
                chroma += 1;
            }
            if height % 2 == 0 && height > 1 {
                up2_linear(&row(&u_samples, u_plane, chroma), width, &mut u_a);
                up2_linear(&row(&v_samples, v_plane, chroma), width, &mut v_a);
                emit(height - 1, &u_a, &v_a);
            }
        }
        Layout::Monochrome => return Err(Error::unsupported("AVIF", "a monochrome frame given chroma")),
    }
    Ok(rgb)
}

/// A monochrome (4:0:0) frame of any depth without alpha, as libavif converts it to Pillow's
/// 8-bit `L` (`AVIF_RGB_FORMAT_GRAY`, which libyuv does not take, so libavif's float path):
/// `Y = (min(y, max) - biasY) / rangeY` in `f32`, clamped to [0, 1], stored as
/// `(u8)(0.5 + Y * 255)`; then `convert("RGB")` repeats it in R, G and B. `None` for the matrix
/// coefficients libavif refuses to convert (`avifGetYUVColorSpaceInfo`) or that this does not
/// model (the YCgCo variants).
pub(super) fn gray(frame: &Frame, matrix: u16, full_range: bool) -> Option<Vec<u8>> {
    // 0 identity, 1 BT.709, 2 unspecified, 4 FCC, 5 BT.470BG, 6 BT.601, 7 SMPTE 240,
    // 9 BT.2020 NCL, 12 chroma-derived NCL: their luma is used as is.
    if !matches!(matrix, 0 | 1 | 2 | 4 | 5 | 6 | 7 | 9 | 12) || !(8..=16).contains(&frame.depth) {
        return None;
    }
    let y_plane = frame.planes.first()?;
    let max = (1u32 << frame.depth) - 1;
    let shift = frame.depth - 8;
    let (bias, range) =
        if full_range { (0.0f32, max as f32) } else { ((16u32 << shift) as f32, (219u32 << shift) as f32) };
    let table: Vec<u8> = (0..=max)
        .map(|code| {
            let y = ((code as f32 - bias) / range).clamp(0.0, 1.0);
            (0.5f32 + y * 255.0f32) as u8
        })
        .collect();
    let mut rgb = Vec::with_capacity(y_plane.samples.len() * 3);
    for &sample in &y_plane.samples {
        let gray = table.get(usize::from(sample).min(max as usize)).copied().unwrap_or(0);
        rgb.extend([gray; 3]);
    }
    Some(rgb)
}

/// libyuv's `ARGBUnattenuate` on x86 (its SSE2/AVX2 rows, which libavif runs on RGBA that is
/// premultiplied in the file): each of R, G, B becomes `min(255, (c * 257 * ia) >> 16)` with
/// `ia = 65536 / a` (`ia = 0` for `a = 0`, `0xffff` for 1, `0x100` for 255).
pub(super) fn unpremultiply(rgb: &mut [u8], alpha: &[u8]) {
    for (pixel, &a) in rgb.chunks_exact_mut(3).zip(alpha) {
        let ia: u32 = match a {
            0 => 0,
            1 => 0xffff,
            255 => 0x100,
            a => 0x10000 / u32::from(a),
        };
        for c in pixel {
            *c = ((u32::from(*c) * 257 * ia) >> 16).min(255) as u8;
        }
    }
}

/// libavif's `avifLimitedToFullY` for 8-bit alpha: `((v - 16) * 255 + 109) / 219`, clamped.
pub(super) fn limited_to_full_alpha(v: u16) -> u8 {
    ((((i32::from(v) - 16) * 255) + 109) / 219).clamp(0, 255) as u8
}
