//! Sun raster files as Pillow's `SunImagePlugin` (and `SunRleDecode.c`) load them, then
//! `convert("RGB")`:
//! - a 32-byte big-endian header: width, height, depth, (ignored) length, type, colour-map
//!   type and colour-map length, then the colour map and the data;
//! - depth 1 is mode `1` with set bits black (`1;I`), 4 and 8 are gray (`L;4` as `v * 17`,
//!   `L`) or, with a colour map, palette indices (`P;4`, `P`); 24 and 32 are BGR(X), or RGB(X)
//!   for type 3;
//! - the colour map (type 1, at most 1024 bytes) is planar: `n = length / 3` reds, then greens,
//!   then blues; indices past it are black. Pillow fails to load a colour map longer than 768
//!   bytes, or one on a depth-1, 24 or 32 image;
//! - types 0, 1, 3, 4 and 5 store rows padded to 16 bits (the last row needs no padding);
//!   type 2 is run-length encoded over unpadded rows: `0x80 0` is a literal `0x80`,
//!   `0x80 n v` is `n + 1` copies of `v`, runs carry on across rows; data that ends early is
//!   "image file is truncated".

use super::Decoded;
use super::bytes::be32;
use super::open_checks::{Header, Verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "SUN";

/// The header fields Pillow reads.
struct SunHeader {
    width: u32,
    height: u32,
    depth: u32,
    file_type: u32,
    map_type: u32,
    map_length: u32,
}

impl SunHeader {
    fn parse(bytes: &[u8]) -> Option<SunHeader> {
        let word = |i: usize| be32(bytes, i * 4);
        Some(SunHeader {
            width: word(1)?,
            height: word(2)?,
            depth: word(3)?,
            file_type: word(5)?,
            map_type: word(6)?,
            map_length: word(7)?,
        })
    }

    /// Whether `SunImageFile._open` accepts it: a known depth and type, a colour map of type 1
    /// and at most 1024 bytes when there is one, and a non-zero size.
    fn is_valid(&self) -> bool {
        matches!(self.depth, 1 | 4 | 8 | 24 | 32)
            && (self.map_length == 0 || (self.map_length <= 1024 && self.map_type == 1))
            && matches!(self.file_type, 0..=5)
            && self.width > 0
            && self.height > 0
    }
}

/// `SunImageFile._open` as a header check.
pub(crate) fn is_sun(header: Header<'_>) -> Verdict {
    match SunHeader::parse(header.bytes) {
        Some(h) => {
            if h.is_valid() {
                Verdict::Yes
            } else {
                Verdict::No
            }
        }
        None if header.complete => Verdict::No,
        None => Verdict::NeedMore,
    }
}

/// Decodes a Sun raster file; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let h = SunHeader::parse(bytes)
        .filter(SunHeader::is_valid)
        .ok_or_else(|| Error::malformed(FORMAT, "not a supported SUN raster header"))?;
    limits.check(h.width.into(), h.height.into())?;
    let (width, height, depth) = (h.width as usize, h.height as usize, h.depth as usize);
    let map_length = h.map_length as usize;
    let offset = 32 + map_length;
    let palette = match (map_length, depth) {
        (0, _) => None,
        (1..=768, 4 | 8) => {
            let map = bytes.get(32..offset).unwrap_or_else(|| bytes.get(32..).unwrap_or(&[]));
            Some(planar_palette(map, map_length / 3))
        }
        (_, 4 | 8) => return Err(Error::malformed(FORMAT, "invalid palette size")),
        _ => return Err(Error::malformed(FORMAT, "a colour map on an image without a palette mode")),
    };
    let row_bytes = (width * depth).div_ceil(8);
    let data = bytes.get(offset..).unwrap_or(&[]);
    let rows = if h.file_type == 2 {
        run_length_rows(data, row_bytes * height)?
    } else {
        padded_rows(data, row_bytes, (width * depth).div_ceil(16) * 2, height)?
    };
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (row, out) in rows.chunks_exact(row_bytes).zip(rgb.chunks_exact_mut(width * 3)) {
        unpack_row(row, depth, h.file_type == 3, palette.as_deref(), out);
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}

/// Pillow's `RGB;L` palette of `entries` colours, padded with black to 256.
fn planar_palette(map: &[u8], entries: usize) -> Vec<[u8; 3]> {
    let at = |i: usize| map.get(i).copied().unwrap_or(0);
    (0..256).map(|i| if i < entries { [at(i), at(i + entries), at(i + 2 * entries)] } else { [0; 3] }).collect()
}

/// Rows of `row_bytes` from rows stored `stride` bytes apart; the last needs no padding.
fn padded_rows(data: &[u8], row_bytes: usize, stride: usize, height: usize) -> Result<Vec<u8>> {
    let needed = (height - 1) * stride + row_bytes;
    if data.len() < needed {
        return Err(Error::Truncated { format: FORMAT, detail: "image file is truncated".into() });
    }
    let mut rows = Vec::with_capacity(row_bytes * height);
    for y in 0..height {
        rows.extend_from_slice(&data[y * stride..y * stride + row_bytes]);
    }
    Ok(rows)
}

/// `ImagingSunRleDecode` as one stream: `total` bytes expanded from the runs.
fn run_length_rows(data: &[u8], total: usize) -> Result<Vec<u8>> {
    let truncated = || Error::Truncated { format: FORMAT, detail: "image file is truncated".into() };
    let mut out = Vec::with_capacity(total);
    let mut pos = 0;
    while out.len() < total {
        match *data.get(pos..).unwrap_or(&[]) {
            [0x80, 0, ..] => {
                out.push(0x80);
                pos += 2;
            }
            [0x80, n, value, ..] => {
                let run = (usize::from(n) + 1).min(total - out.len());
                out.resize(out.len() + run, value);
                pos += 3;
            }
            [0x80, ..] | [] => return Err(truncated()),
            [literal, ..] => {
                out.push(literal);
                pos += 1;
            }
        }
    }
    Ok(out)
}

/// One row to RGB, as Pillow's unpacker for the depth and `convert("RGB")`.
fn unpack_row(row: &[u8], depth: usize, rgb_order: bool, palette: Option<&[[u8; 3]]>, out: &mut [u8]) {
    let byte = |i: usize| row.get(i).copied().unwrap_or(0);
    for (x, px) in out.chunks_exact_mut(3).enumerate() {
        let value = match depth {
            1 => [if byte(x / 8) & (0x80 >> (x % 8)) != 0 { 0 } else { 255 }; 3],
            4 | 8 => {
                let v = if depth == 4 { (byte(x / 2) >> (4 * (1 - x % 2))) & 0x0F } else { byte(x) };
                match palette {
                    Some(p) => p.get(usize::from(v)).copied().unwrap_or([0; 3]),
                    None if depth == 4 => [v * 17; 3],
                    None => [v; 3],
                }
            }
            _ => {
                let at = x * (depth / 8);
                let (a, b, c) = (byte(at), byte(at + 1), byte(at + 2));
                if rgb_order { [a, b, c] } else { [c, b, a] }
            }
        };
        px.copy_from_slice(&value);
    }
}
