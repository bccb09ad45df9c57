//! PCX (Paintbrush) as Pillow's `PcxImagePlugin` and `PcxDecode.c` load it, then
//! `convert("RGB")`:
//! - a 128-byte header: the bounding box (its size is `xmax - xmin + 1` by `ymax - ymin + 1`),
//!   bits per pixel, planes and the stored bytes per line;
//! - modes: 1 bit x 1 plane is mode `1` (0 or 255); 1 bit x 2 or 4 planes is `P` with the
//!   header's 16-colour palette; version 5, 8 bits x 1 plane is `L`, or `P` when the file ends
//!   with a 769-byte palette block (marker 12) that is not the gray ramp; version 5, 8 bits x
//!   3 planes is RGB; anything else is refused ("unknown PCX mode");
//! - the line length Pillow uses is `planes * stride`, `stride = ceil(width * bits / 8)` made
//!   even when the header's value differs from it;
//! - RLE: a byte `0xC0 | n` repeats the next byte `n` times, any other byte is a literal; a
//!   run past the end of a line is an error (Pillow's "buffer overrun"), and data that ends
//!   before the last line is "image file is truncated".

use super::Decoded;
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "PCX";
const HEADER: usize = 128;

/// How one decoded line becomes pixels.
enum Mode {
    /// 1 bit per pixel, MSB first: 0 or 255.
    Bilevel,
    /// 2 or 4 bit planes of 1 bit each, combined into palette indices.
    PlanarPalette { planes: usize, palette: Vec<u8> },
    /// One byte per pixel, looked up in a 256-entry palette (the gray ramp for `L`).
    Indexed { palette: Vec<u8> },
    /// Three planes: R, then G, then B.
    Rgb,
}

/// Decodes a PCX file; the header's size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    decode_at(bytes, 0, limits)
}

/// Decodes the PCX image that starts at byte `start` of `bytes` (a DCX frame): the header and
/// data are read from there, the 8-bit palette from the end of `bytes`, as Pillow seeks.
pub(crate) fn decode_at(bytes: &[u8], start: usize, limits: &Limits) -> Result<Decoded> {
    let header = bytes
        .get(start..)
        .and_then(|b| b.get(..68))
        .ok_or_else(|| Error::Truncated { format: FORMAT, detail: "short header".into() })?;
    let le16 = |at: usize| i64::from(u16::from_le_bytes([header[at], header[at + 1]]));
    let (x0, y0, x1, y1) = (le16(4), le16(6), le16(8) + 1, le16(10) + 1);
    if x1 <= x0 || y1 <= y0 {
        return Err(Error::malformed(FORMAT, "bad PCX image size"));
    }
    let (width, height) = ((x1 - x0) as usize, (y1 - y0) as usize);
    let (version, bits, planes) = (header[1], usize::from(header[3]), usize::from(header[65]));
    let provided_stride = le16(66) as usize;
    let mode = match (bits, planes) {
        (1, 1) => Mode::Bilevel,
        (1, 2 | 4) => Mode::PlanarPalette { planes, palette: header[16..64].to_vec() },
        (8, 1) if version == 5 => Mode::Indexed { palette: trailing_palette(bytes)? },
        (8, 3) if version == 5 => Mode::Rgb,
        _ => return Err(Error::unsupported(FORMAT, format!("unknown PCX mode ({bits} bits, {planes} planes)"))),
    };
    limits.check(width as u64, height as u64)?;
    let mut stride = (width * bits).div_ceil(8);
    if provided_stride != stride {
        stride += stride % 2;
    }
    let line_bytes = planes * stride;
    let lines = decode_lines(bytes.get(start.saturating_add(HEADER)..).unwrap_or(&[]), line_bytes, height)?;

    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (line, out) in lines.chunks_exact(line_bytes).zip(rgb.chunks_exact_mut(width * 3)) {
        unpack_line(&mode, line, stride, out);
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}

/// The `P` palette of an 8-bit single-plane file: the last 769 bytes when they start with 12
/// and are not the gray ramp, else the gray ramp (mode `L`). Pillow seeks 769 bytes back from
/// the end to look, which fails on a shorter file ("Invalid argument").
fn trailing_palette(bytes: &[u8]) -> Result<Vec<u8>> {
    let at = bytes.len().checked_sub(769).ok_or_else(|| {
        Error::malformed(FORMAT, "an 8-bit file shorter than the 769-byte palette block Pillow seeks to")
    })?;
    Ok(match bytes.get(at..) {
        Some([12, palette @ ..]) => palette.to_vec(),
        _ => (0..=255u8).flat_map(|i| [i; 3]).collect(),
    })
}

/// `ImagingPcxDecode`: `height` lines of `line_bytes` bytes each.
fn decode_lines(data: &[u8], line_bytes: usize, height: usize) -> Result<Vec<u8>> {
    let total = line_bytes * height;
    let mut out = Vec::with_capacity(total);
    let mut line_start = 0;
    let mut pos = 0;
    while out.len() < total {
        let Some(&byte) = data.get(pos) else {
            return Err(Error::Truncated { format: FORMAT, detail: "image file is truncated".into() });
        };
        if byte & 0xC0 == 0xC0 {
            let Some(&value) = data.get(pos + 1) else {
                return Err(Error::Truncated { format: FORMAT, detail: "image file is truncated".into() });
            };
            let n = usize::from(byte & 0x3F);
            if out.len() + n > line_start + line_bytes {
                return Err(Error::malformed(FORMAT, "buffer overrun when reading image file"));
            }
            out.resize(out.len() + n, value);
            pos += 2;
        } else {
            out.push(byte);
            pos += 1;
        }
        if out.len() == line_start + line_bytes {
            line_start = out.len();
        }
    }
    Ok(out)
}

/// One line of `width` pixels to RGB, as Pillow's unpacker for the mode and `convert("RGB")`.
fn unpack_line(mode: &Mode, line: &[u8], stride: usize, out: &mut [u8]) {
    let color = |palette: &[u8], i: usize| {
        // Entries past the palette's end are black (a new Pillow palette is zeroed).
        palette.get(i * 3..i * 3 + 3).map_or([0; 3], |c| [c[0], c[1], c[2]])
    };
    let bit = |plane: usize, x: usize| line.get(plane * stride + x / 8).is_some_and(|b| b & (0x80 >> (x % 8)) != 0);
    for (x, px) in out.chunks_exact_mut(3).enumerate() {
        let value = match mode {
            Mode::Bilevel => [if bit(0, x) { 255 } else { 0 }; 3],
            Mode::PlanarPalette { planes, palette } => {
                let index = (0..*planes).filter(|&p| bit(p, x)).map(|p| 1usize << p).sum();
                color(palette, index)
            }
            Mode::Indexed { palette } => color(palette, usize::from(line.get(x).copied().unwrap_or(0))),
            Mode::Rgb => [0, 1, 2].map(|p| line.get(p * stride + x).copied().unwrap_or(0)),
        };
        px.copy_from_slice(&value);
    }
}
