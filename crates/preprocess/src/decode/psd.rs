//! Photoshop (PSD) files as Pillow's `PsdImagePlugin` loads them: the merged (composite) image
//! after the header, colour-mode data, image resources and layer section, then
//! `convert("RGB")`:
//! - version 1; (colour mode, depth) must be one of Pillow's `MODES`: bitmap (`1`), gray,
//!   duotone and multichannel (`L`), indexed (`P`, with a 768-byte planar palette when the
//!   colour-mode data is exactly that long, else black), RGB (`RGBA` with exactly 4
//!   channels), CMYK (stored inverted), Lab (`LAB`: L*, a*, b* planes copied as stored, a*
//!   and b* offset by 128, then [`cielab`](super::cielab)'s Little CMS transform). The file
//!   needs at least the mode's channels; extra channels are ignored;
//! - each channel is a plane, raw (`width * height` bytes apart) or PackBits (a table of
//!   per-row byte counts gives where each channel starts; each channel is then decoded as one
//!   stream of rows, runs and literals cut at the end of a row, `0x80` a no-op);
//! - a channel whose data ends early is "image file is truncated"; a compression other than 0
//!   or 1 is "cannot load this image"; CMYK becomes RGB by Pillow's `cmyk2rgb`.

use super::Decoded;
use super::bytes::{be16, be32};
use super::cielab;
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "PSD";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Bilevel,
    Gray,
    Palette,
    Rgb,
    Cmyk,
    Lab,
}

/// Reads big-endian fields as Pillow's `read` + `i16`/`i32` do: a short read is an error.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let start = self.pos.min(self.bytes.len());
        let end = self.pos.saturating_add(n).min(self.bytes.len());
        self.pos = self.pos.saturating_add(n);
        &self.bytes[start..end]
    }

    fn u16(&mut self) -> Result<usize> {
        match *self.take(2) {
            [a, b] => Ok(usize::from(u16::from_be_bytes([a, b]))),
            _ => Err(short()),
        }
    }

    fn u32(&mut self) -> Result<usize> {
        match *self.take(4) {
            [a, b, c, d] => Ok(u32::from_be_bytes([a, b, c, d]) as usize),
            _ => Err(short()),
        }
    }
}

fn short() -> Error {
    Error::Truncated { format: FORMAT, detail: "the header ends early".into() }
}

fn truncated() -> Error {
    Error::Truncated { format: FORMAT, detail: "image file is truncated".into() }
}

/// Decodes a PSD file's merged image; the size is checked against `limits` before any pixel
/// buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let mut r = Cursor { bytes, pos: 0 };
    let header = r.take(26);
    let field16 = |at: usize| be16(header, at);
    let field32 = |at: usize| be32(header, at);
    if header.len() < 26 || field16(4) != Some(1) {
        return Err(Error::malformed(FORMAT, "not a PSD file"));
    }
    let (file_channels, height, width) = (field16(12).unwrap_or(0), field32(14).unwrap_or(0), field32(18).unwrap_or(0));
    let (mode, channels) = match (field16(24).unwrap_or(0), field16(22).unwrap_or(0)) {
        (0, 1) => (Mode::Bilevel, 1),
        (0 | 1 | 7 | 8, 8) => (Mode::Gray, 1),
        (2, 8) => (Mode::Palette, 1),
        (3, 8) => (Mode::Rgb, 3),
        (4, 8) => (Mode::Cmyk, 4),
        (9, 8) => (Mode::Lab, 3),
        (mode, depth) => return Err(Error::unsupported(FORMAT, format!("colour mode {mode} at {depth} bits"))),
    };
    if channels > file_channels {
        return Err(Error::malformed(FORMAT, "not enough channels"));
    }
    let channels = usize::from(if mode == Mode::Rgb && file_channels == 4 { 4 } else { channels });
    limits.check(width.into(), height.into())?;
    let (width, height) = (width as usize, height as usize);

    let colour_data = r.u32()?;
    let palette = r.take(colour_data);
    let palette = (mode == Mode::Palette && colour_data == 768).then_some(palette);
    let resources = r.u32()?;
    skip_resources(&mut r, resources)?;
    let layers = r.u32()?;
    if layers > 0 {
        let end = r.pos + layers;
        r.u32()?;
        r.pos = end;
    }

    let row_bytes = if mode == Mode::Bilevel { width.div_ceil(8) } else { width };
    let planes: Vec<Vec<u8>> = match r.u16()? {
        0 => (0..channels)
            .map(|c| {
                let start = r.pos.saturating_add(c * width * height);
                bytes.get(start..start.saturating_add(row_bytes * height)).map(<[u8]>::to_vec).ok_or_else(truncated)
            })
            .collect::<Result<_>>()?,
        1 => {
            let counts = r.take(channels * height * 2);
            if counts.len() < channels * height * 2 {
                return Err(Error::Truncated { format: FORMAT, detail: "Truncated File Read".into() });
            }
            let mut start = r.pos;
            let mut planes = Vec::with_capacity(channels);
            for channel in counts.chunks_exact(height * 2) {
                planes.push(packbits(bytes.get(start..).unwrap_or(&[]), row_bytes, height)?);
                start += channel.chunks_exact(2).map(|c| usize::from(u16::from_be_bytes([c[0], c[1]]))).sum::<usize>();
            }
            planes
        }
        _ => return Err(Error::malformed(FORMAT, "cannot load this image")),
    };

    let sample = |c: usize, i: usize| planes.get(c).and_then(|p| p.get(i)).copied().unwrap_or(0);
    if mode == Mode::Lab {
        let rgb = cielab::to_rgb(width, height, FORMAT, |y, row| {
            for (x, px) in row.chunks_exact_mut(4).enumerate() {
                let i = y * width + x;
                px.copy_from_slice(&[sample(0, i), sample(1, i), sample(2, i), 255]);
            }
        })?;
        return Ok(Decoded {
            image: RgbImage::from_parts(width as u32, height as u32, rgb),
            orientation: Orientation::Normal,
        });
    }
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (i, px) in rgb.chunks_exact_mut(3).enumerate() {
        let value = match mode {
            Mode::Bilevel => {
                let (y, x) = (i / width, i % width);
                [if sample(0, y * row_bytes + x / 8) & (0x80 >> (x % 8)) != 0 { 255 } else { 0 }; 3]
            }
            Mode::Gray => [sample(0, i); 3],
            Mode::Palette => {
                let index = usize::from(sample(0, i));
                let at = |i: usize| palette.and_then(|p| p.get(i)).copied().unwrap_or(0);
                [at(index), at(256 + index), at(512 + index)]
            }
            Mode::Rgb => [sample(0, i), sample(1, i), sample(2, i)],
            Mode::Lab => unreachable!("Lab images are converted above"),
            Mode::Cmyk => {
                // The planes are stored inverted (`C;I` ...); `cmyk2rgb` then computes
                // `nk - nk * c / 255` with Pillow's rounding, `nk = 255 - k`.
                let nk = u32::from(sample(3, i));
                let channel = |c| {
                    let ink = 255 - u32::from(sample(c, i));
                    let t = ink * nk + 128;
                    nk.saturating_sub(((t >> 8) + t) >> 8) as u8
                };
                [channel(0), channel(1), channel(2)]
            }
        };
        px.copy_from_slice(&value);
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}

/// The image resources block, walked as Pillow walks it (a short read is an error).
fn skip_resources(r: &mut Cursor<'_>, size: usize) -> Result<()> {
    if size == 0 {
        return Ok(());
    }
    let end = r.pos.saturating_add(size);
    while r.pos < end {
        r.take(4);
        r.u16()?;
        let name = match *r.take(1) {
            [n] => r.take(usize::from(n)).len(),
            _ => return Err(short()),
        };
        if name & 1 == 0 {
            r.take(1);
        }
        let length = r.u32()?;
        if r.take(length).len() & 1 == 1 {
            r.take(1);
        }
    }
    Ok(())
}

/// `ImagingPackbitsDecode`: `height` rows of `row_bytes` from `data`; a run or literal past
/// the end of a row is cut there.
fn packbits(data: &[u8], row_bytes: usize, height: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(row_bytes * height);
    let mut row_end = row_bytes;
    let mut pos = 0;
    while out.len() < row_bytes * height {
        let &control = data.get(pos).ok_or_else(truncated)?;
        match control {
            0x80 => {
                pos += 1;
                continue;
            }
            0x81.. => {
                let &value = data.get(pos + 1).ok_or_else(truncated)?;
                let n = (257 - usize::from(control)).min(row_end - out.len());
                out.resize(out.len() + n, value);
                pos += 2;
            }
            _ => {
                let n = usize::from(control) + 1;
                let literal = data.get(pos + 1..pos + 1 + n).ok_or_else(truncated)?;
                let keep = n.min(row_end - out.len());
                out.extend_from_slice(&literal[..keep]);
                pos += 1 + n;
            }
        }
        if out.len() >= row_end {
            row_end += row_bytes;
        }
    }
    Ok(out)
}
