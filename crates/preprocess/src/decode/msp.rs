//! Windows Paint (MSP) files as Pillow's `MspImagePlugin` loads them, then `convert("RGB")`:
//! - a 32-byte header whose 16 little-endian words XOR to zero, the width and height at bytes
//!   4 and 6; the image is mode `1` (a set bit is white, most significant bit first);
//! - version 1 (`DanM`) stores `ceil(width / 8)`-byte rows from byte 32;
//! - version 2 (`LinS`) has a table of `height` row lengths, then the rows, each a sequence of
//!   runs (`0, count, value`: `count` copies of `value`; `n > 0`: the next `n` bytes), capped
//!   at `width` bytes a row as Pillow caps them; a row of length 0 is white. Pillow then reads
//!   the concatenated rows as one stream of `ceil(width / 8)`-byte rows, so rows of another
//!   length shift the ones after them; too little data is an error.

use super::Decoded;
use super::open_checks::{Header, Verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "MSP";

/// The width and height, when the header's checksum is right (`MspImageFile._open`).
fn size(bytes: &[u8]) -> Option<(u16, u16)> {
    let words: Vec<u16> = bytes.get(..32)?.chunks_exact(2).map(|w| u16::from_le_bytes([w[0], w[1]])).collect();
    let checksum = words.iter().fold(0, |acc, w| acc ^ w);
    (checksum == 0).then_some((words[2], words[3]))
}

/// `MspImageFile._open` as a header check: 32 bytes with a zero checksum and a non-zero size.
pub(crate) fn is_msp(header: Header<'_>) -> Verdict {
    match size(header.bytes) {
        Some((w, h)) if w > 0 && h > 0 => Verdict::Yes,
        _ if header.bytes.len() < 32 && !header.complete => Verdict::NeedMore,
        _ => Verdict::No,
    }
}

/// Decodes an MSP file; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let (width, height) = size(bytes).ok_or_else(|| Error::malformed(FORMAT, "bad MSP checksum"))?;
    limits.check(width.into(), height.into())?;
    let (width, height) = (usize::from(width), usize::from(height));
    let row_bytes = width.div_ceil(8);
    let packed = if bytes.starts_with(b"DanM") {
        bytes
            .get(32..32 + row_bytes * height)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| Error::Truncated { format: FORMAT, detail: "image file is truncated".into() })?
    } else {
        run_length_rows(bytes, width, height)?
    };
    if packed.len() < row_bytes * height {
        return Err(Error::Truncated { format: FORMAT, detail: "not enough image data".into() });
    }
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (row, out) in packed.chunks_exact(row_bytes).zip(rgb.chunks_exact_mut(width * 3)) {
        for (x, px) in out.chunks_exact_mut(3).enumerate() {
            px.fill(if row[x / 8] & (0x80 >> (x % 8)) != 0 { 255 } else { 0 });
        }
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}

/// `MspDecoder.decode`: the rows of a `LinS` file, concatenated.
fn run_length_rows(bytes: &[u8], width: usize, height: usize) -> Result<Vec<u8>> {
    let table = bytes
        .get(32..32 + 2 * height)
        .ok_or_else(|| Error::Truncated { format: FORMAT, detail: "Truncated MSP file in row map".into() })?;
    let mut pos = 32 + 2 * height;
    let mut data = Vec::with_capacity(width.div_ceil(8) * height);
    for (y, length) in table.chunks_exact(2).enumerate() {
        let length = usize::from(u16::from_le_bytes([length[0], length[1]]));
        if length == 0 {
            data.resize(data.len() + width.div_ceil(8), 0xFF);
            continue;
        }
        let row = bytes.get(pos..pos + length).ok_or_else(|| Error::Truncated {
            format: FORMAT,
            detail: format!("Truncated MSP file, expected {length} bytes on row {y}"),
        })?;
        pos += length;
        let start = data.len();
        let mut i = 0;
        while i < row.len() {
            let kind = row[i];
            i += 1;
            let room = width - (data.len() - start);
            if kind == 0 {
                let (Some(&count), Some(&value)) = (row.get(i), row.get(i + 1)) else {
                    return Err(Error::malformed(FORMAT, format!("Corrupted MSP file in row {y}")));
                };
                data.resize(data.len() + usize::from(count).min(room), value);
                i += 2;
            } else {
                let count = usize::from(kind).min(room);
                data.extend_from_slice(row.get(i..(i + count).min(row.len())).unwrap_or(&[]));
                i += count;
            }
        }
    }
    Ok(data)
}
