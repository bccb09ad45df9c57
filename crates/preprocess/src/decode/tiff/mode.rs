//! Pillow's `OPEN_INFO` lookup (`TiffImagePlugin._setup`): the key (byte order, photometric
//! interpretation, sample format, fill order, bits per sample, extra samples) to the unpacker
//! that turns stored samples into Pillow's mode, reduced here to what `convert("RGB")` needs.

use super::ifd::ByteOrder;

/// How stored samples become RGB: Pillow's (mode, rawmode) pair, then `convert("RGB")`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pixel {
    /// Mode `1`, rawmode `1` (a set bit is white) or `1;I` (a set bit is black).
    Bilevel { invert: bool },
    /// Mode `L` from 2, 4 or 8-bit samples (`L;2`, `L;4`, `L`, and the inverted `…I`): the value
    /// scaled to 8 bits (`* 0x55`, `* 0x11`); sample 0 of each pixel (`LX`, `LA`).
    Gray { bits: u8, invert: bool },
    /// Modes `I;16`/`I;16B` (from `I;12` too): `convert("RGB")` saturates at 255.
    Gray16,
    /// Mode `I` from signed 16 or 32-bit, or unsigned 32-bit samples read as `INT32`
    /// (`I;16S`, `I;32S`, `I;32N`): clipped to 0..255.
    Int { bits: u8, signed: bool },
    /// Mode `F` (`F;32F`): `F` -> `L` truncates and clips, then gray.
    Float,
    /// `RGB`/`RGBA`/`RGBX…` of 8 or 16-bit samples (16-bit: the high byte, Pillow's `;16`
    /// unpackers); alpha and extra samples dropped.
    Rgb { bits: u8 },
    /// `RGBa` (associated alpha): un-premultiplied by Pillow's `unpackRGBa`
    /// (`CLIP8(c * 255 / a)`, 0 where `a == 0`) on 8-bit values, then alpha dropped.
    RgbPremultiplied { bits: u8 },
    /// `CMYK` of 8 or 16-bit samples, then Pillow's `cmyk2rgb`.
    Cmyk { bits: u8 },
    /// `P` (1, 2, 4 or 8-bit indexes; `PX`, `PA` use sample 0) through the ColorMap.
    Palette { bits: u8 },
    /// YCbCr samples of compressed data: converted by libtiff's RGBA interface.
    YCbCr,
    /// `LAB` (CIELab, photometric 8, three 8-bit samples): Pillow's `LAB` storage, then Little
    /// CMS's LAB to sRGB transform ([`super::lab`]).
    Lab,
    /// YCbCr samples of uncompressed data: Pillow's raw `YCbCr` unpacker, then its own
    /// `ImagingConvertYCbCr2RGB`.
    YCbCrPillow,
}

/// The fields of Pillow's `OPEN_INFO` key. `bits` and `extra` are the tuples after `_setup`'s
/// adjustments; `sample_format` is collapsed to one value when all are equal.
#[derive(Debug, Clone)]
pub struct Key<'a> {
    pub order: ByteOrder,
    pub photometric: u64,
    pub sample_format: &'a [u64],
    pub fill_order: u64,
    pub bits: &'a [u64],
    pub extra: &'a [u64],
}

/// Pillow's `OPEN_INFO[key]`, or `None` where Pillow raises "unknown pixel mode".
pub fn lookup(key: &Key<'_>) -> Option<Pixel> {
    let little = key.order == ByteOrder::Little;
    let reversed = key.fill_order == 2;
    if key.fill_order != 1 && !reversed {
        return None;
    }
    let sf = match key.sample_format {
        [one] => *one,
        _ => return None,
    };
    let bits = key.bits;
    let extra = key.extra;
    let all = |b: u64, n: usize| bits.len() == n && bits.iter().all(|&x| x == b);
    let pixel = match key.photometric {
        0 | 1 => {
            let invert = key.photometric == 0;
            match (sf, bits, extra) {
                (1, [1], []) => Pixel::Bilevel { invert },
                (1, [2], []) => Pixel::Gray { bits: 2, invert },
                (1, [4], []) => Pixel::Gray { bits: 4, invert },
                (1, [8], []) => Pixel::Gray { bits: 8, invert },
                (2, [8], []) if !invert && !reversed => Pixel::Gray { bits: 8, invert: false },
                (1, [12], []) if !invert && little && !reversed => Pixel::Gray16,
                (1, [16], []) if little && (!reversed || !invert) => Pixel::Gray16,
                (1, [16], []) if !invert && !reversed => Pixel::Gray16,
                (2, [16], []) if !invert && !reversed => Pixel::Int { bits: 16, signed: true },
                (1, [32], []) if !invert && little && !reversed => Pixel::Int { bits: 32, signed: false },
                (2, [32], []) if !invert && !reversed => Pixel::Int { bits: 32, signed: true },
                (3, [32], []) if !reversed => Pixel::Float,
                (1, [8, 8], [0] | [2]) if !invert && !reversed => Pixel::Gray { bits: 8, invert: false },
                _ => return None,
            }
        }
        2 => {
            if sf != 1 {
                return None;
            }
            if reversed {
                return all(8, 3).then_some(Pixel::Rgb { bits: 8 });
            }
            let straight8 = (all(8, 3) && extra.is_empty())
                || (all(8, 4) && matches!(extra, [] | [0] | [2] | [999]))
                || (all(8, 5) && matches!(extra, [0, 0] | [2, 0]))
                || (all(8, 6) && matches!(extra, [0, 0, 0] | [2, 0, 0]));
            let premultiplied8 =
                (all(8, 4) && extra == [1]) || (all(8, 5) && extra == [1, 0]) || (all(8, 6) && extra == [1, 0, 0]);
            if straight8 {
                Pixel::Rgb { bits: 8 }
            } else if premultiplied8 {
                Pixel::RgbPremultiplied { bits: 8 }
            } else if (all(16, 3) && extra.is_empty()) || (all(16, 4) && matches!(extra, [] | [0] | [2])) {
                Pixel::Rgb { bits: 16 }
            } else if all(16, 4) && extra == [1] {
                Pixel::RgbPremultiplied { bits: 16 }
            } else {
                return None;
            }
        }
        3 => match (sf, bits, extra) {
            (1, [b @ (1 | 2 | 4 | 8)], []) => Pixel::Palette { bits: *b as u8 },
            (1, [8, 8], [0] | [2]) if !reversed => Pixel::Palette { bits: 8 },
            _ => return None,
        },
        5 => {
            if sf != 1 || reversed {
                return None;
            }
            if (all(8, 4) && extra.is_empty()) || (all(8, 5) && extra == [0]) || (all(8, 6) && extra == [0, 0]) {
                Pixel::Cmyk { bits: 8 }
            } else if all(16, 4) && extra.is_empty() {
                Pixel::Cmyk { bits: 16 }
            } else {
                return None;
            }
        }
        6 => match (sf, bits, extra, reversed) {
            (1, [8], [], false) => Pixel::Gray { bits: 8, invert: false },
            (1, [8, 8, 8], [], false) => Pixel::YCbCr,
            _ => return None,
        },
        // Pillow's table has no ICCLab (9) or ITULab (10) entries.
        8 => match (sf, bits, extra, reversed) {
            (1, [8, 8, 8], [], false) => Pixel::Lab,
            _ => return None,
        },
        _ => return None,
    };
    Some(pixel)
}
