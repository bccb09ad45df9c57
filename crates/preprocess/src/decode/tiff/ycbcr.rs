//! libtiff's YCbCr to RGB conversion (`TIFFYCbCrToRGBInit` / `TIFFYCbCrtoRGB` in tif_color.c),
//! which its RGBA interface (`TIFFRGBAImage`, used by Pillow for YCbCr data outside new-style
//! JPEG) applies: integer tables built in 16-bit fixed point from the luma coefficients and
//! ReferenceBlackWhite, in libtiff's single-precision arithmetic.

use super::FORMAT;
use super::ifd::Ifd;
use super::tags::{REFERENCE_BLACK_WHITE, YCBCR_COEFFICIENTS};
use crate::{Error, Result};

const SHIFT: u32 = 16;
const ONE_HALF: i32 = 1 << (SHIFT - 1);

/// libtiff's `FIX(x)`: `(int32_t)(x * (1L << SHIFT) + 0.5)` with `x` a float.
fn fix(x: f32) -> i32 {
    (f64::from(x * 65536.0f32) + 0.5) as i32
}

/// libtiff's `Code2V(c, RB, RW, CR)` in float, then `CLAMPw(v, -128*32, 128*32)` and the cast.
fn code2v(c: i32, rb: f32, rw: f32, cr: f32) -> i32 {
    let range = if rw - rb != 0.0 { rw - rb } else { 1.0 };
    let v = ((c - rb as i32) as f32 * cr) / range;
    v.clamp(-4096.0, 4096.0) as i32
}

/// The conversion tables for one image.
#[derive(Debug)]
pub struct YCbCrToRgb {
    y: [i32; 256],
    cr_r: [i32; 256],
    cb_b: [i32; 256],
    cr_g: [i32; 256],
    cb_g: [i32; 256],
}

impl YCbCrToRgb {
    /// The tables of an image: its YCbCrCoefficients and ReferenceBlackWhite, else libtiff's
    /// defaults (0.299, 0.587, 0.114; 0, 255, 128, 255, 128, 255). Refused as libtiff's
    /// `initYCbCrConversion` refuses them (and Pillow then the file): a NaN coefficient or a
    /// zero LumaGreen, which the tables divide by; a ReferenceBlackWhite value outside
    /// `(-2³¹ + 128, 2³¹)` or NaN.
    pub fn of(ifd: &Ifd<'_>) -> Result<Self> {
        let luma = match ifd.rationals(YCBCR_COEFFICIENTS).as_deref() {
            Some(&[r, g, b]) => [r, g, b],
            _ => [0.299, 0.587, 0.114],
        };
        let reference = match ifd.rationals(REFERENCE_BLACK_WHITE).as_deref() {
            Some(&[a, b, c, d, e, f]) => [a, b, c, d, e, f],
            _ => [0.0, 255.0, 128.0, 255.0, 128.0, 255.0],
        };
        if luma.iter().any(|v| v.is_nan()) || luma[1] == 0.0 {
            return Err(Error::malformed(FORMAT, "Invalid values for YCbCrCoefficients tag"));
        }
        let in_range = |v: f32| v > (-0x7FFF_FFFF + 128) as f32 && v < 0x7FFF_FFFF as f32;
        if !reference.into_iter().all(in_range) {
            return Err(Error::malformed(FORMAT, "Invalid values for ReferenceBlackWhite tag"));
        }
        Ok(Self::new(luma, reference))
    }

    /// Tables for `luma` (YCbCrCoefficients, default 0.299, 0.587, 0.114) and
    /// `reference` (ReferenceBlackWhite, default 0, 255, 128, 255, 128, 255 for YCbCr).
    pub fn new(luma: [f32; 3], reference: [f32; 6]) -> Self {
        let [red, green, blue] = luma;
        let f1 = 2.0f32 - 2.0f32 * red;
        let d1 = fix(f1.clamp(0.0, 2.0));
        let f2 = red * f1 / green;
        let d2 = -fix(f2.clamp(0.0, 2.0));
        let f3 = 2.0f32 - 2.0f32 * blue;
        let d3 = fix(f3.clamp(0.0, 2.0));
        let f4 = blue * f3 / green;
        let d4 = -fix(f4.clamp(0.0, 2.0));
        let mut t = YCbCrToRgb { y: [0; 256], cr_r: [0; 256], cb_b: [0; 256], cr_g: [0; 256], cb_g: [0; 256] };
        for i in 0..256usize {
            let x = i as i32 - 128;
            let cr = code2v(x, reference[4] - 128.0, reference[5] - 128.0, 127.0);
            let cb = code2v(x, reference[2] - 128.0, reference[3] - 128.0, 127.0);
            t.cr_r[i] = d1.wrapping_mul(cr).wrapping_add(ONE_HALF) >> SHIFT;
            t.cb_b[i] = d3.wrapping_mul(cb).wrapping_add(ONE_HALF) >> SHIFT;
            t.cr_g[i] = d2.wrapping_mul(cr);
            t.cb_g[i] = d4.wrapping_mul(cb).wrapping_add(ONE_HALF);
            t.y[i] = code2v(x + 128, reference[0], reference[1], 255.0);
        }
        t
    }

    /// `TIFFYCbCrtoRGB` for 8-bit samples.
    pub fn rgb(&self, y: u8, cb: u8, cr: u8) -> [u8; 3] {
        let (y, cb, cr) = (usize::from(y), usize::from(cb), usize::from(cr));
        let yv = self.y[y];
        let r = yv + self.cr_r[cr];
        let g = yv + (self.cb_g[cb].wrapping_add(self.cr_g[cr]) >> SHIFT);
        let b = yv + self.cb_b[cb];
        [r.clamp(0, 255) as u8, g.clamp(0, 255) as u8, b.clamp(0, 255) as u8]
    }
}

/// Pillow's `ImagingConvertYCbCr2RGB` (ConvertYCbCr.c): `y` plus table terms in 6-bit fixed
/// point, shifted down, clamped. Its tables hold `(int)(c * (i - 128) * 64 + 0.5)` for the JFIF
/// coefficients (1.402, -0.34414, -0.71414, 1.772), computed here the same way.
pub fn pillow_rgb(y: u8, cb: u8, cr: u8) -> [u8; 3] {
    let term = |c: f64, i: u8| (c * (f64::from(i) - 128.0) * 64.0 + 0.5) as i32;
    let y = i32::from(y);
    let r = y + (term(1.402, cr) >> 6);
    let g = y + ((term(-0.34414, cb) + term(-0.71414, cr)) >> 6);
    let b = y + (term(1.772, cb) >> 6);
    [r.clamp(0, 255) as u8, g.clamp(0, 255) as u8, b.clamp(0, 255) as u8]
}
