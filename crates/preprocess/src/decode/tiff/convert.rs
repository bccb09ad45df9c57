//! Pillow's unpacker for the TIFF's rawmode followed by `convert("RGB")` (Unpack.c, Convert.c),
//! pixel by pixel from a [`Raster`].

use super::ifd::ByteOrder;
use super::mode::Pixel;
use super::raster::Raster;
use super::ycbcr::YCbCrToRgb;

/// Pillow's `MULDIV255(a, b)`: `((a * b + 128) >> 8) + a * b + 128) >> 8`.
fn muldiv255(a: i32, b: i32) -> i32 {
    let t = a * b + 128;
    ((t >> 8) + t) >> 8
}

/// Pillow's `unpackRGBa` on one 8-bit colour value: `CLIP8(c * 255 / a)`, 0 where `a == 0`.
fn unpremultiply(c: u32, a: u32) -> u8 {
    match a {
        0 => 0,
        255 => c as u8,
        a => (c * 255 / a).min(255) as u8,
    }
}

/// The RGB8 (HWC) image of `raster` in Pillow's semantics for `pixel`; `palette` holds 256
/// entries (Pillow's ColorMap, `value // 256`, zeros past the map); `ycbcr` converts YCbCr
/// samples (libtiff's RGBA interface).
pub fn to_rgb(raster: &Raster, pixel: Pixel, palette: &[[u8; 3]; 256], ycbcr: Option<&YCbCrToRgb>) -> Vec<u8> {
    if let Some(rgb) = by_rows(raster, pixel) {
        return rgb;
    }
    let (w, h) = (raster.width, raster.height);
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    let hi = |v: u32, bits: u8| if bits == 16 { v >> 8 } else { v };
    let mut i = 0;
    for y in 0..h {
        for x in 0..w {
            let s = |k: usize| raster.sample(y, x, k);
            let px: [u8; 3] = match pixel {
                Pixel::Bilevel { invert } => {
                    let v = if (s(0) != 0) != invert { 255 } else { 0 };
                    [v; 3]
                }
                Pixel::Gray { bits, invert } => {
                    let v = match bits {
                        2 => s(0) * 0x55,
                        4 => s(0) * 0x11,
                        _ => s(0),
                    } as u8;
                    [if invert { 255 - v } else { v }; 3]
                }
                Pixel::Gray16 => [s(0).min(255) as u8; 3],
                Pixel::Int { bits, signed } => {
                    let v = match (bits, signed) {
                        (16, true) => i32::from(s(0) as u16 as i16),
                        (16, false) => s(0) as i32,
                        _ => s(0) as i32,
                    };
                    [v.clamp(0, 255) as u8; 3]
                }
                Pixel::Float => {
                    let f = f32::from_bits(s(0));
                    let v = if f <= 0.0 {
                        0
                    } else if f >= 255.0 {
                        255
                    } else {
                        f as u8
                    };
                    [v; 3]
                }
                Pixel::Rgb { bits } => [hi(s(0), bits) as u8, hi(s(1), bits) as u8, hi(s(2), bits) as u8],
                Pixel::RgbPremultiplied { bits } => {
                    let a = hi(s(3), bits);
                    [
                        unpremultiply(hi(s(0), bits), a),
                        unpremultiply(hi(s(1), bits), a),
                        unpremultiply(hi(s(2), bits), a),
                    ]
                }
                Pixel::Cmyk { bits } => {
                    let nk = 255 - hi(s(3), bits) as i32;
                    let c = |v: u32| (nk - muldiv255(hi(v, bits) as i32, nk)).clamp(0, 255) as u8;
                    [c(s(0)), c(s(1)), c(s(2))]
                }
                Pixel::Palette { .. } => palette.get(s(0) as usize).copied().unwrap_or([0; 3]),
                Pixel::YCbCrPillow => {
                    let v = |k: usize| s(k).min(255) as u8;
                    super::ycbcr::pillow_rgb(v(0), v(1), v(2))
                }
                // Converted by Little CMS in `lab::to_rgb`; `decode` never passes it here.
                Pixel::Lab => [0; 3],
                Pixel::YCbCr => {
                    let v = |k: usize| s(k).min(255) as u8;
                    ycbcr.map_or([0; 3], |t| t.rgb(v(0), v(1), v(2)))
                }
            };
            if let Some(out) = rgb.get_mut(i..i + 3) {
                out.copy_from_slice(&px);
            }
            i += 3;
        }
    }
    rgb
}

/// The common cases row by row (contiguous 8-bit gray (`L`), RGB/RGBA/RGBX… and CMYK samples
/// here; 16-bit and planar RGB in the functions below), the same bytes as [`to_rgb`]'s
/// per-pixel path; `None` for the other cases.
fn by_rows(raster: &Raster, pixel: Pixel) -> Option<Vec<u8>> {
    let plane = match raster.planes.as_slice() {
        [plane] if raster.bits == 8 => plane,
        [plane] if raster.bits == 16 => return contiguous_16bit(raster, plane, pixel),
        [r, g, b] => return planar_rgb(raster, [r, g, b], pixel),
        _ => return None,
    };
    let (w, n) = (raster.width, raster.samples);
    let mut rgb = crate::buffer_pool::take(w * raster.height * 3);
    let rows = plane.chunks_exact(raster.row_bytes.max(1)).zip(rgb.chunks_exact_mut(w * 3));
    match pixel {
        Pixel::Rgb { bits: 8 } if n >= 3 => {
            for (src, dst) in rows {
                for (s, d) in src.chunks_exact(n).zip(dst.chunks_exact_mut(3)) {
                    d.copy_from_slice(&s[..3]);
                }
            }
        }
        Pixel::Gray { bits: 8, invert } => {
            for (src, dst) in rows {
                for (s, d) in src.chunks_exact(n).zip(dst.chunks_exact_mut(3)) {
                    d.fill(if invert { 255 - s[0] } else { s[0] });
                }
            }
        }
        Pixel::Cmyk { bits: 8 } if n >= 4 => {
            for (src, dst) in rows {
                for (s, d) in src.chunks_exact(n).zip(dst.chunks_exact_mut(3)) {
                    let nk = 255 - i32::from(s[3]);
                    for (o, &c) in d.iter_mut().zip(&s[..3]) {
                        *o = (nk - muldiv255(i32::from(c), nk)).clamp(0, 255) as u8;
                    }
                }
            }
        }
        _ => {
            crate::buffer_pool::give(rgb);
            return None;
        }
    }
    Some(rgb)
}

/// Contiguous 16-bit gray (`I;16`: saturated at 255) and RGB/RGBA (the high byte of each
/// sample), row by row; the same bytes as [`to_rgb`]'s per-pixel path.
fn contiguous_16bit(raster: &Raster, plane: &[u8], pixel: Pixel) -> Option<Vec<u8>> {
    let (w, n) = (raster.width, raster.samples);
    // The byte holding each sample's high half, in the file's byte order.
    let (hi, lo) = if raster.order == ByteOrder::Little { (1, 0) } else { (0, 1) };
    let mut rgb = crate::buffer_pool::take(w * raster.height * 3);
    let rows = plane.chunks_exact(raster.row_bytes.max(1)).zip(rgb.chunks_exact_mut(w * 3));
    match pixel {
        Pixel::Rgb { bits: 16 } if n >= 3 => {
            for (src, dst) in rows {
                for (s, d) in src.chunks_exact(2 * n).zip(dst.chunks_exact_mut(3)) {
                    d.copy_from_slice(&[s[hi], s[2 + hi], s[4 + hi]]);
                }
            }
        }
        Pixel::Gray16 if n == 1 => {
            for (src, dst) in rows {
                for (s, d) in src.chunks_exact(2).zip(dst.chunks_exact_mut(3)) {
                    d.fill(if s[hi] == 0 { s[lo] } else { 255 });
                }
            }
        }
        _ => {
            crate::buffer_pool::give(rgb);
            return None;
        }
    }
    Some(rgb)
}

/// Planar 8 or 16-bit RGB (three planes; the high byte of 16-bit samples), row by row; the same
/// bytes as [`to_rgb`]'s per-pixel path.
fn planar_rgb(raster: &Raster, planes: [&Vec<u8>; 3], pixel: Pixel) -> Option<Vec<u8>> {
    let (size, hi) = match (pixel, raster.bits, raster.order) {
        (Pixel::Rgb { bits: 8 }, 8, _) => (1, 0),
        (Pixel::Rgb { bits: 16 }, 16, ByteOrder::Little) => (2, 1),
        (Pixel::Rgb { bits: 16 }, 16, ByteOrder::Big) => (2, 0),
        _ => return None,
    };
    let w = raster.width;
    let mut rgb = crate::buffer_pool::take(w * raster.height * 3);
    let row_bytes = raster.row_bytes.max(1);
    let [r, g, b] = planes.map(|p| p.chunks_exact(row_bytes));
    for (((dst, r), g), b) in rgb.chunks_exact_mut(w * 3).zip(r).zip(g).zip(b) {
        let samples = r.chunks_exact(size).zip(g.chunks_exact(size)).zip(b.chunks_exact(size));
        for (d, ((r, g), b)) in dst.chunks_exact_mut(3).zip(samples) {
            d.copy_from_slice(&[r[hi], g[hi], b[hi]]);
        }
    }
    Some(rgb)
}
