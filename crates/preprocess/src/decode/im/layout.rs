//! How an IM file's rows are laid out and become RGB: the pairs of mode and raw layout Pillow
//! unpacks (`Unpack.c`), its bit decoder (`BitDecode.c`) and `convert("RGB")` from each mode.

/// How the rows are laid out (Pillow's raw modes, or its bit decoder), and what a pixel is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Layout {
    /// `1`: a bit per pixel, most significant first, set is white.
    Bits,
    /// `L`, `P` (and `L` into mode 1: non-zero is white): a byte per pixel.
    Byte,
    /// `P;2`, `P;4`: 2 or 4 bits per index, most significant first.
    Packed(u32),
    /// `RGB`: interleaved bytes.
    Rgb,
    /// `…;L`: each row holds its `n` bands one after the other (`RGB;L`, `LA;L`, `PA;L`,
    /// `RGBA;L`, `RGBX;L`, `CMYK;L`, `YCbCr;L`); `RGB;T`/`RYB;T` with `planar`, whole planes in
    /// the order G, R, B.
    Bands { n: usize, planar: bool },
    /// `I;16`/`I;16L` (little-endian) and `I;16B`.
    U16 { big: bool },
    /// `I;32`, `I;32S`: signed little-endian.
    I32,
    /// `F;8`, `F;8S`, `F;16`, `F;16S`, `F;32` (unsigned), `F;32F`: little-endian to float.
    Float { bytes: usize, signed: bool, float: bool },
    /// `F;n` for other `n` below 32: Pillow's bit decoder (`BitDecode.c`).
    BitStream(u32),
}

/// How a pixel becomes RGB (`convert("RGB")` from the image's mode).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Colour {
    /// Mode `1`: non-zero is white.
    Bilevel,
    /// `L`, `LA`, and `I` and the `I;16` modes: clamped to 0..=255.
    Gray,
    /// `P`, `PA`: through the palette (black without one).
    Palette,
    Rgb,
    Cmyk,
    YCbCr,
    /// `F`: clamped, truncated toward zero.
    Float,
}

/// The pair of mode and raw layout as Pillow's unpackers take it, or `None` where it refuses.
pub(super) fn layout(mode: &[u8], rawmode: &str) -> Option<(Layout, Colour)> {
    let float = |bytes, signed, float| Layout::Float { bytes, signed, float };
    let bands = |n| Layout::Bands { n, planar: false };
    Some(match (mode, rawmode) {
        (b"1", "1") => (Layout::Bits, Colour::Bilevel),
        (b"1", "L") => (Layout::Byte, Colour::Bilevel),
        (b"L", "L") => (Layout::Byte, Colour::Gray),
        (b"P", "L" | "P") => (Layout::Byte, Colour::Palette),
        (b"P", "P;2") => (Layout::Packed(2), Colour::Palette),
        (b"P", "P;4") => (Layout::Packed(4), Colour::Palette),
        (b"PA", "PA;L") => (bands(2), Colour::Palette),
        (b"LA", "LA;L") => (bands(2), Colour::Gray),
        (b"RGB" | b"RGBX", "RGB") => (Layout::Rgb, Colour::Rgb),
        (b"RGB" | b"RGBX", "RGB;L") => (bands(3), Colour::Rgb),
        (b"RGB" | b"RGBX", "RGBX;L") | (b"RGB" | b"RGBA", "RGBA;L") => (bands(4), Colour::Rgb),
        (b"RGB" | b"RGBX", "RGB;T" | "RYB;T") => (Layout::Bands { n: 3, planar: true }, Colour::Rgb),
        (b"CMYK", "CMYK;L") => (bands(4), Colour::Cmyk),
        (b"YCbCr", "YCbCr;L") => (bands(3), Colour::YCbCr),
        (b"I" | b"I;16", "I;16") | (b"I;16L", "I;16L") => (Layout::U16 { big: false }, Colour::Gray),
        (b"I" | b"I;16" | b"I;16B", "I;16B") => (Layout::U16 { big: true }, Colour::Gray),
        (b"I", "I;32" | "I;32S") => (Layout::I32, Colour::Gray),
        (b"F", "F;8") => (float(1, false, false), Colour::Float),
        (b"F", "F;8S") => (float(1, true, false), Colour::Float),
        (b"F", "F;16") => (float(2, false, false), Colour::Float),
        (b"F", "F;16S") => (float(2, true, false), Colour::Float),
        (b"F", "F;32") => (float(4, false, false), Colour::Float),
        (b"F", "F;32F") => (float(4, false, true), Colour::Float),
        (b"F", raw) => match raw.strip_prefix("F;")?.parse::<u32>() {
            Ok(bits @ 1..=31) if raw == format!("F;{bits}") => (Layout::BitStream(bits), Colour::Float),
            _ => return None,
        },
        _ => return None,
    })
}

impl Layout {
    /// Bytes per stored row of `width` pixels (per plane for planar files).
    pub(super) fn row_bytes(self, width: usize) -> usize {
        match self {
            Layout::Bits => width.div_ceil(8),
            Layout::Packed(bits) | Layout::BitStream(bits) => (width * bits as usize).div_ceil(8),
            Layout::Byte | Layout::Bands { planar: true, .. } => width,
            Layout::Rgb => width * 3,
            Layout::Bands { n, .. } => width * n,
            Layout::U16 { .. } => width * 2,
            Layout::I32 => width * 4,
            Layout::Float { bytes, .. } => width * bytes,
        }
    }
}

/// Pillow's `MULDIV255`.
fn muldiv255(a: i64, b: i64) -> i64 {
    let t = a * b + 128;
    ((t >> 8) + t) >> 8
}

/// `F` to RGB: Pillow's float-to-8-bit conversion (clamped to `0..=255`, truncated; NaN is 0).
pub(crate) fn float_gray(f: f32) -> u8 {
    if f <= 0.0 {
        0
    } else if f >= 255.0 {
        255
    } else {
        f as u8
    }
}

/// One pixel's bands (the first for the one-band modes) to RGB, as `convert("RGB")` from the
/// image's mode.
fn to_rgb(v: [i64; 4], colour: Colour, palette: &[[u8; 3]; 256]) -> [u8; 3] {
    match colour {
        Colour::Bilevel => [if v[0] != 0 { 255 } else { 0 }; 3],
        Colour::Gray | Colour::Float => [v[0].clamp(0, 255) as u8; 3],
        Colour::Palette => palette[(v[0] & 0xFF) as usize],
        Colour::Rgb => [v[0] as u8, v[1] as u8, v[2] as u8],
        Colour::YCbCr => crate::decode::tiff::ycbcr::pillow_rgb(v[0] as u8, v[1] as u8, v[2] as u8),
        Colour::Cmyk => {
            let nk = 255 - v[3];
            [v[0], v[1], v[2]].map(|c| (nk - muldiv255(c, nk)).clamp(0, 255) as u8)
        }
    }
}

/// One stored row (`row`, of [`Layout::row_bytes`]; for a planar file, that row of each plane
/// in file order) into RGB pixels `out`. Not for [`Layout::BitStream`].
pub(super) fn unpack_row(
    layout: Layout,
    colour: Colour,
    row: &[u8],
    planes: [&[u8]; 3],
    palette: &[[u8; 3]; 256],
    out: &mut [u8],
) {
    let width = out.len() / 3;
    for (x, px) in out.chunks_exact_mut(3).enumerate() {
        let le = |at: usize, n: usize| row[at..at + n].iter().rev().fold(0u32, |v, &b| v << 8 | u32::from(b));
        let one = |v: i64| [v; 4];
        let rgb = match layout {
            Layout::Bits => to_rgb(one(i64::from(row[x / 8] >> (7 - x % 8) & 1)), colour, palette),
            Layout::Byte => to_rgb(one(i64::from(row[x])), colour, palette),
            Layout::Packed(bits) => {
                let per = (8 / bits) as usize;
                let shift = 8 - bits * (1 + (x % per) as u32);
                to_rgb(one(i64::from(row[x / per] >> shift & ((1u8 << bits) - 1))), colour, palette)
            }
            Layout::Rgb => [row[3 * x], row[3 * x + 1], row[3 * x + 2]],
            // Planes G, R, B.
            Layout::Bands { planar: true, .. } => [planes[1][x], planes[0][x], planes[2][x]],
            Layout::Bands { n, .. } => {
                let band = |b: usize| i64::from(row[b.min(n - 1) * width + x]);
                to_rgb([band(0), band(1), band(2), band(3)], colour, palette)
            }
            Layout::U16 { big } => {
                let v = if big { le(2 * x, 2).swap_bytes() >> 16 } else { le(2 * x, 2) };
                to_rgb(one(i64::from(v)), colour, palette)
            }
            Layout::I32 => to_rgb(one(i64::from(le(4 * x, 4) as i32)), colour, palette),
            Layout::Float { bytes, signed, float } => {
                let raw = le(bytes * x, bytes);
                let f = match (bytes, signed, float) {
                    (_, _, true) => f32::from_bits(raw),
                    (1, true, _) => f32::from(raw as u8 as i8),
                    (2, true, _) => f32::from(raw as u16 as i16),
                    _ => raw as f32,
                };
                [float_gray(f); 3]
            }
            Layout::BitStream(_) => [0; 3],
        };
        px.copy_from_slice(&rgb);
    }
}

/// Pillow's bit decoder (`BitDecode.c`) as `ImImagePlugin` sets it up (`bits`, `pad` 8, `fill`
/// 3: bytes enter the buffer above the bits held, values leave from the bottom; rows bottom-up):
/// each row starts a new count of buffered bits but keeps the buffer's leftover bits, which the
/// next byte is or-ed into. `None` when the data ends before the last row.
pub(super) fn bit_stream(data: &[u8], bits: u32, width: usize, height: usize, out: &mut [u8]) -> Option<()> {
    let mask = (1u64 << bits) - 1;
    let (mut buffer, mut count, mut x, mut y) = (0u64, 0u32, 0usize, height - 1);
    for &byte in data {
        buffer |= u64::from(byte) << count;
        count += 8;
        while count >= bits {
            let value = buffer & mask;
            buffer = if count > 32 { u64::from(byte) >> (8 - (count - bits)) } else { buffer >> bits };
            count -= bits;
            out[(y * width + x) * 3..][..3].fill(float_gray(value as f32));
            x += 1;
            if x == width {
                if y == 0 {
                    return Some(());
                }
                (x, y, count) = (0, y - 1, 0);
            }
        }
    }
    None
}
