//! SGI images as Pillow's `SgiImagePlugin` loads them, then `convert("RGB")`:
//! - a 512-byte header: magic 474, compression (0 raw, 1 RLE), bytes per channel (1 or 2),
//!   dimension, width, height and channel count, big-endian; the (bytes, dimension, channels)
//!   triple must be one of `MODES` (L, RGB or RGBA, 8 or 16 bits);
//! - the rows are stored bottom-up, one plane per channel; 16-bit samples keep their high byte
//!   (Pillow's `L;16B`/`RGB;16B`/`RGBA;16B` unpackers), alpha is dropped, L is replicated;
//! - raw data must cover every plane (Pillow: "image file is truncated" / "not enough image
//!   data"); bytes past it are ignored;
//! - RLE follows `SgiRleDecode.c` exactly: a table of row offsets and one of row lengths (read
//!   as the number of RLE chunks), each chunk a count byte (high bit: copy, else run) with the
//!   same bounds checks, a row buffer kept from one row to the next, and the same early stop
//!   (a last chunk that is not the zero terminator ends the decoding, leaving later rows black).

use super::Decoded;
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "SGI";
const HEADER: usize = 512;

/// Decodes an SGI file; the header's size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let header = Header::parse(bytes)?;
    limits.check(header.width as u64, header.height as u64)?;
    let planes = match header.compression {
        0 => raw_planes(bytes, &header)?,
        1 => rle_planes(bytes, &header)?,
        // Pillow sets no tile for other values and `load` raises "cannot load this image".
        other => return Err(Error::unsupported(FORMAT, format!("compression {other}"))),
    };
    Ok(Decoded { image: to_rgb(&header, &planes), orientation: Orientation::Normal })
}

struct Header {
    compression: u8,
    /// Bytes per sample, 1 or 2.
    bpc: usize,
    width: usize,
    height: usize,
    /// 1 (L), 3 (RGB) or 4 (RGBA).
    channels: usize,
}

impl Header {
    fn parse(bytes: &[u8]) -> Result<Header> {
        let be16 = |at: usize| bytes.get(at..at + 2).map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])));
        let field = |at| be16(at).ok_or_else(|| Error::Truncated { format: FORMAT, detail: "short header".into() });
        if be16(0) != Some(474) {
            return Err(Error::malformed(FORMAT, "not an SGI image file"));
        }
        let (compression, bpc) = match bytes.get(2..4) {
            Some(&[c, b]) => (c, usize::from(b)),
            _ => return Err(Error::Truncated { format: FORMAT, detail: "short header".into() }),
        };
        let (dimension, width, height, channels) = (field(4)?, field(6)?, field(8)?, field(10)?);
        // Pillow's MODES table.
        let known = matches!((bpc, dimension, channels), (1 | 2, 1 | 2, 1) | (1 | 2, 3, 3 | 4));
        if !known {
            return Err(Error::unsupported(
                FORMAT,
                format!("mode of {bpc} bytes per sample, dimension {dimension}, {channels} channels"),
            ));
        }
        Ok(Header { compression, bpc, width, height, channels })
    }
}

/// One 8-bit plane per channel, `width * height` each, rows top-down.
type Planes = Vec<Vec<u8>>;

/// Uncompressed data: plane after plane from byte 512, each `width * height * bpc` bytes with
/// its rows bottom-up.
fn raw_planes(bytes: &[u8], h: &Header) -> Result<Planes> {
    let (w, rows) = (h.width, h.height);
    let page = w * rows * h.bpc;
    let mut planes = Vec::with_capacity(h.channels);
    for c in 0..h.channels {
        let start = HEADER + c * page;
        let data = bytes.get(start..start + page).ok_or_else(|| Error::Truncated {
            format: FORMAT,
            detail: format!("plane {c} needs {page} bytes from offset {start}"),
        })?;
        let mut plane = vec![0u8; w * rows];
        for (y, out) in plane.chunks_exact_mut(w).enumerate() {
            let src = (rows - 1 - y) * w * h.bpc;
            for (x, o) in out.iter_mut().enumerate() {
                *o = data.get(src + x * h.bpc).copied().unwrap_or(0);
            }
        }
        planes.push(plane);
    }
    Ok(planes)
}

/// RLE data, as `ImagingSgiRleDecode` reads it.
fn rle_planes(bytes: &[u8], h: &Header) -> Result<Planes> {
    let overrun = || Error::malformed(FORMAT, "buffer overrun when reading image file");
    let data = bytes.get(HEADER..).unwrap_or(&[]);
    let tables = h.channels * h.height;
    if data.len() < 8 * tables {
        return Err(overrun());
    }
    let entry = |i: usize| data.get(i * 4..i * 4 + 4).map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let (w, rows, z) = (h.width, h.height, h.channels);
    let mut planes = vec![vec![0u8; w * rows]; z];
    // The row buffer interleaves the channels, `bpc` bytes per sample; it is not cleared
    // between rows, so a row that ends early keeps the previous row's tail.
    let mut row = vec![0u8; w * z * 2];
    'rows: for file_row in 0..rows {
        for c in 0..z {
            let offset = entry(file_row + c * rows) as usize;
            let chunks = entry(tables + file_row + c * rows) as usize;
            let start = offset.checked_sub(HEADER).ok_or_else(overrun)?;
            let expanded = if h.bpc == 1 {
                expand_row(&mut row, c, data, start, chunks, z, w)
            } else {
                expand_row16(&mut row, c, data, start, chunks, z, w)
            };
            match expanded {
                Expansion::Row => {}
                Expansion::Stop => break 'rows,
                Expansion::Overrun => return Err(overrun()),
            }
        }
        let y = rows - 1 - file_row;
        let step = z * h.bpc;
        for (c, plane) in planes.iter_mut().enumerate() {
            let out = &mut plane[y * w..(y + 1) * w];
            for (x, o) in out.iter_mut().enumerate() {
                *o = row.get(x * step + c * h.bpc).copied().unwrap_or(0);
            }
        }
    }
    Ok(planes)
}

/// How the expansion of one channel's row ended.
enum Expansion {
    /// A zero count, or the chunks ran out: the row is stored.
    Row,
    /// The last chunk was not a terminator: decoding stops here, without error.
    Stop,
    /// A read past the data or a row longer than the width: "buffer overrun".
    Overrun,
}

/// `expandrow`: 8-bit chunks from `data[pos..]` into channel `c` of `row`. The data's last
/// byte index is `end`; the checks are Pillow's (a copy must end strictly before `end`).
fn expand_row(row: &mut [u8], c: usize, data: &[u8], mut pos: usize, chunks: usize, z: usize, w: usize) -> Expansion {
    let end = data.len() - 1;
    let mut x = 0;
    for n in (1..=chunks).rev() {
        let Some(&pixel) = data.get(pos).filter(|_| pos <= end) else { return Expansion::Overrun };
        pos += 1;
        if n == 1 && pixel != 0 {
            return Expansion::Stop;
        }
        let count = usize::from(pixel & 0x7F);
        if count == 0 {
            return Expansion::Row;
        }
        if x + count > w {
            return Expansion::Overrun;
        }
        if pixel & 0x80 != 0 {
            if pos + count > end {
                return Expansion::Overrun;
            }
            for i in 0..count {
                row[(x + i) * z + c] = data[pos + i];
            }
            pos += count;
        } else {
            let Some(&value) = data.get(pos).filter(|_| pos <= end) else { return Expansion::Overrun };
            pos += 1;
            for i in 0..count {
                row[(x + i) * z + c] = value;
            }
        }
        x += count;
    }
    Expansion::Row
}

/// `expandrow2`: the 16-bit twin of [`expand_row`]; the count is the low byte of a 16-bit atom
/// and samples are copied as 2 bytes into `row[(x * z + c) * 2..]`.
fn expand_row16(row: &mut [u8], c: usize, data: &[u8], mut pos: usize, chunks: usize, z: usize, w: usize) -> Expansion {
    let end = data.len() - 1;
    let mut x = 0;
    for n in (1..=chunks).rev() {
        if pos + 1 > end {
            return Expansion::Overrun;
        }
        let pixel = data[pos + 1];
        pos += 2;
        if n == 1 && pixel != 0 {
            return Expansion::Stop;
        }
        let count = usize::from(pixel & 0x7F);
        if count == 0 {
            return Expansion::Row;
        }
        if x + count > w {
            return Expansion::Overrun;
        }
        if pixel & 0x80 != 0 {
            if pos + 2 * count > end {
                return Expansion::Overrun;
            }
            for i in 0..count {
                let at = ((x + i) * z + c) * 2;
                row[at..at + 2].copy_from_slice(&data[pos + 2 * i..pos + 2 * i + 2]);
            }
            pos += 2 * count;
        } else {
            if pos + 2 > end {
                return Expansion::Overrun;
            }
            for i in 0..count {
                let at = ((x + i) * z + c) * 2;
                row[at..at + 2].copy_from_slice(&data[pos..pos + 2]);
            }
            pos += 2;
        }
        x += count;
    }
    Expansion::Row
}

/// `convert("RGB")` of L (replicated), RGB, or RGBA (alpha dropped).
fn to_rgb(h: &Header, planes: &Planes) -> RgbImage {
    let pixels = h.width * h.height;
    let mut rgb = crate::buffer_pool::take(pixels * 3);
    for (i, out) in rgb.chunks_exact_mut(3).enumerate() {
        for (k, o) in out.iter_mut().enumerate() {
            let plane = if h.channels == 1 { 0 } else { k };
            *o = planes.get(plane).and_then(|p| p.get(i)).copied().unwrap_or(0);
        }
    }
    RgbImage::from_parts(h.width as u32, h.height as u32, rgb)
}
