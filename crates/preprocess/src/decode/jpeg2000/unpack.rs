//! Pillow's JPEG 2000 unpackers (`j2ku_*` of `Jpeg2KDecode.c`) and the table that picks one
//! from the image mode, OpenJPEG's colour space, the component count and the subsampling: one
//! decoded tile (OpenJPEG's buffer: each component's samples in turn, 1, 2 or 4 native-endian
//! bytes each) into Pillow's image memory ([`Canvas`]), with Pillow's arithmetic: `(offset +
//! sample) >> shift` (or `<<`) on `unsigned`, truncated to the pixel's byte or word, where the
//! offset re-centres signed samples and rounds a precision above the target.
//!
//! Pillow's addressing is kept as it is, including its reads of subsampled components as
//! `w / dx` samples per row and `j2ku_gray_rgb`'s rows starting `x0` bytes (not pixels) in.

use super::header::Mode;
use super::openjpeg::{Component, ImageInfo};
use crate::decode::tiff::ycbcr::pillow_rgb;

/// Pillow's image memory of one mode: `width * height` pixels of `pixel` bytes (1 for `L` and
/// `P`, 2 for `I;16` (little-endian), 4 for the others: `L L L A` for `LA`, `R G B 255` for
/// `RGB`), zeroed as `Image.core.new` leaves it.
#[derive(Debug)]
pub(super) struct Canvas {
    pub mode: Mode,
    pub width: usize,
    pub height: usize,
    pub pixel: usize,
    pub data: Vec<u8>,
}

impl Canvas {
    /// A zeroed canvas; the caller has checked `width * height` against the limits.
    pub fn new(mode: Mode, width: usize, height: usize) -> Self {
        let pixel = match mode {
            Mode::L | Mode::P => 1,
            Mode::I16 => 2,
            _ => 4,
        };
        Canvas { mode, width, height, pixel, data: vec![0; width * height * pixel] }
    }

    /// Row `y` from byte `at`.
    fn row(&mut self, y: usize, at: usize) -> &mut [u8] {
        let line = self.width * self.pixel;
        self.data.get_mut(y * line + at..(y + 1) * line).unwrap_or(&mut [])
    }
}

/// One of Pillow's unpackers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unpacker {
    GrayL,
    GrayI,
    GrayRgb,
    GrayaLa,
    SrgbRgb,
    SyccRgb,
    SrgbaRgba,
    SyccaRgba,
}

const GRAY: i32 = 2;
const SRGB: i32 = 1;
const SYCC: i32 = 3;
const CMYK: i32 = 5;

/// `j2k_unpackers`: mode, colour space, components, whether subsampling is allowed, unpacker.
const UNPACKERS: &[(Mode, i32, usize, bool, Unpacker)] = &[
    (Mode::L, GRAY, 1, false, Unpacker::GrayL),
    (Mode::P, SRGB, 1, false, Unpacker::GrayL),
    (Mode::P, CMYK, 1, false, Unpacker::GrayL),
    (Mode::Pa, SRGB, 2, false, Unpacker::GrayaLa),
    (Mode::I16, GRAY, 1, false, Unpacker::GrayI),
    (Mode::La, GRAY, 2, false, Unpacker::GrayaLa),
    (Mode::Rgb, GRAY, 1, false, Unpacker::GrayRgb),
    (Mode::Rgb, GRAY, 2, false, Unpacker::GrayRgb),
    (Mode::Rgb, SRGB, 3, true, Unpacker::SrgbRgb),
    (Mode::Rgb, SYCC, 3, true, Unpacker::SyccRgb),
    (Mode::Rgb, SRGB, 4, true, Unpacker::SrgbRgb),
    (Mode::Rgb, SYCC, 4, true, Unpacker::SyccRgb),
    (Mode::Rgba, GRAY, 1, false, Unpacker::GrayRgb),
    (Mode::Rgba, GRAY, 2, false, Unpacker::GrayaLa),
    (Mode::Rgba, SRGB, 3, true, Unpacker::SrgbRgb),
    (Mode::Rgba, SYCC, 3, true, Unpacker::SyccRgb),
    (Mode::Rgba, GRAY, 4, true, Unpacker::SrgbaRgba),
    (Mode::Rgba, SRGB, 4, true, Unpacker::SrgbaRgba),
    (Mode::Rgba, SYCC, 4, true, Unpacker::SyccaRgba),
    (Mode::Cmyk, CMYK, 4, true, Unpacker::SrgbaRgba),
];

/// Pillow's choice of unpacker: an unknown or unspecified colour space is guessed from the
/// component count and the first subsampled component, then the table is searched.
pub(super) fn select(mode: Mode, info: &ImageInfo) -> Option<Unpacker> {
    let n = info.comps.len();
    let subsampling = info.comps.iter().position(|c| c.dx != 1 || c.dy != 1);
    let mut color_space = info.color_space;
    if color_space == -1 || color_space == 0 {
        color_space = match (n, subsampling) {
            (1 | 2, _) => GRAY,
            (3 | 4, None | Some(0 | 3)) => SRGB,
            (3 | 4, Some(1 | 2)) => SYCC,
            _ => color_space,
        };
    }
    UNPACKERS
        .iter()
        .find(|&&(m, cs, comps, sub, _)| m == mode && cs == color_space && comps == n && (sub || subsampling.is_none()))
        .map(|row| row.4)
}

/// A tile's place: `x0`, `y0` relative to the image origin, `w` x `h` samples.
#[derive(Debug, Clone, Copy)]
pub(super) struct Place {
    pub x0: usize,
    pub y0: usize,
    pub w: usize,
    pub h: usize,
}

/// One component's reading: `shift` to the target depth, the `offset` added first, and
/// `csiz`, its bytes per sample in OpenJPEG's buffer.
#[derive(Debug, Clone, Copy)]
struct Reading {
    shift: i32,
    offset: u32,
    csiz: usize,
}

impl Reading {
    fn new(c: &Component, bits: i32) -> Self {
        let prec = c.prec.clamp(1, 31) as i32;
        let shift = bits - prec;
        let mut offset: u32 = if c.sgnd { 1 << (prec - 1) } else { 0 };
        if shift < 0 {
            offset = offset.wrapping_add(1 << (-shift - 1));
        }
        let csiz = match (prec + 7) >> 3 {
            3 => 4,
            n => n as usize,
        };
        Reading { shift, offset, csiz }
    }

    /// The sample at byte `at` of `data` (0 past its end), shifted.
    fn value(&self, data: &[u8], at: usize) -> u32 {
        let word = match (self.csiz, data.get(at..at + self.csiz)) {
            (1, Some(b)) => u32::from(b[0]),
            (2, Some(b)) => u32::from(u16::from_ne_bytes([b[0], b[1]])),
            (4, Some(b)) => u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
            _ => 0,
        };
        let x = self.offset.wrapping_add(word);
        if self.shift < 0 { x >> -self.shift } else { x << self.shift }
    }
}

/// Runs `unpacker` on one tile's `data`.
pub(super) fn unpack(unpacker: Unpacker, comps: &[Component], place: Place, data: &[u8], canvas: &mut Canvas) {
    let Place { x0, y0, w, h } = place;
    match unpacker {
        Unpacker::GrayL | Unpacker::GrayI | Unpacker::GrayRgb => {
            let bits = if unpacker == Unpacker::GrayI { 16 } else { 8 };
            let r = Reading::new(&comps[0], bits);
            for y in 0..h {
                let at = match unpacker {
                    Unpacker::GrayL => x0,
                    Unpacker::GrayI => x0 * 2,
                    _ => x0,
                };
                let row = canvas.row(y0 + y, at);
                for x in 0..w {
                    let v = r.value(data, r.csiz * (y * w + x));
                    match unpacker {
                        Unpacker::GrayL => put(row, x, &[v as u8]),
                        Unpacker::GrayI => put(row, x * 2, &(v as u16).to_le_bytes()),
                        _ => put(row, x * 4, &[v as u8, v as u8, v as u8, 0xFF]),
                    }
                }
            }
        }
        Unpacker::GrayaLa => {
            let (r, a) = (Reading::new(&comps[0], 8), Reading::new(&comps[1], 8));
            let alpha = r.csiz * w * h;
            for y in 0..h {
                let row = canvas.row(y0 + y, x0 * 4);
                for x in 0..w {
                    let v = r.value(data, r.csiz * (y * w + x)) as u8;
                    let av = a.value(data, alpha + a.csiz * (y * w + x)) as u8;
                    put(row, x * 4, &[v, v, v, av]);
                }
            }
        }
        Unpacker::SrgbRgb | Unpacker::SyccRgb | Unpacker::SrgbaRgba | Unpacker::SyccaRgba => {
            let n = if matches!(unpacker, Unpacker::SrgbRgb | Unpacker::SyccRgb) { 3 } else { 4 };
            let ycc = matches!(unpacker, Unpacker::SyccRgb | Unpacker::SyccaRgba);
            let mut starts = [0usize; 4];
            let mut readings = [Reading { shift: 0, offset: 0, csiz: 1 }; 4];
            let mut cursor = 0usize;
            for k in 0..n {
                starts[k] = cursor;
                readings[k] = Reading::new(&comps[k], 8);
                let (dx, dy) = (comps[k].dx as usize, comps[k].dy as usize);
                cursor += readings[k].csiz * (w / dx) * (h / dy);
            }
            for y in 0..h {
                let row = canvas.row(y0 + y, x0 * 4);
                for x in 0..w {
                    let mut px = [0u8, 0, 0, 0xFF];
                    for k in 0..n {
                        let (c, r) = (&comps[k], &readings[k]);
                        let (dx, dy) = (c.dx as usize, c.dy as usize);
                        let at = starts[k] + r.csiz * ((y / dy) * (w / dx) + x / dx);
                        px[k] = r.value(data, at) as u8;
                    }
                    if ycc {
                        let [red, green, blue] = pillow_rgb(px[0], px[1], px[2]);
                        px = [red, green, blue, px[3]];
                    }
                    put(row, x * 4, &px);
                }
            }
        }
    }
}

/// Writes `bytes` at `at` of `row` (nothing past its end).
fn put(row: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(out) = row.get_mut(at..at + bytes.len()) {
        out.copy_from_slice(bytes);
    }
}
