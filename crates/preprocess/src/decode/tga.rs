//! TGA as Pillow's `TgaImagePlugin` reads it, then `convert("RGB")`.
//!
//! - Image types 1/9 (colour-mapped), 2/10 (true colour) and 3/11 (gray), the second of each
//!   pair run-length encoded (`TgaRleDecode.c`: a run may not cross a row, a literal may).
//! - Pixel layouts (Pillow's `MODES`): colour-mapped 8-bit; gray 1-bit (raw only: the RLE
//!   decoder never finishes a 1-bit image), 8-bit and 16-bit (`LA`, alpha ignored); true colour
//!   16-bit (`BGRA;15Z`, each 5-bit channel `v * 255 / 31`), 24-bit `BGR`, 32-bit `BGRA`.
//!   Any other pairing is refused as Pillow refuses it.
//! - The colour map (`start` black entries, then `size` entries of 16, 24 or 32 bits) is looked
//!   up for colour-mapped images, and also for 8 and 16-bit gray ones that carry a map (Pillow
//!   puts the palette on them); entries past the map are black; more than 256 is refused. A
//!   map on a 1-bit or true-colour image is refused.
//! - Rows are bottom-up unless bit 0x20 of the descriptor is set; bit 0x10 mirrors each row.
//! - An `RGBA` file (true colour, 16 or 32-bit) shorter than 26 bytes is refused, as Pillow's
//!   footer check fails on it.

use super::Decoded;
use super::bytes::le16;
use super::open_checks::{Header, Reader, Verdict, verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "TGA";

/// Pillow's length of a TGA header.
const HEADER: usize = 18;

/// How one stored pixel becomes RGB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// 1 bit, most significant first, set = white.
    Bilevel,
    /// One byte (gray, or a colour-map index); `LA` is this with an ignored second byte.
    Index { bytes: usize },
    /// `BGRA;15Z`: little-endian 5-5-5 with the top bit ignored.
    Bgr15,
    /// `BGR` or `BGRA` bytes.
    Bgr { bytes: usize },
}

impl Layout {
    fn row_bytes(self, width: usize) -> usize {
        match self {
            Layout::Bilevel => width.div_ceil(8),
            Layout::Index { bytes } | Layout::Bgr { bytes } => width * bytes,
            Layout::Bgr15 => width * 2,
        }
    }
}

fn truncated() -> Error {
    Error::Truncated { format: FORMAT, detail: "image file is truncated".into() }
}

/// `TgaImageFile._open`'s checks that raise `SyntaxError` (the plugin has no `_accept`), so
/// that a file failing them falls through to the next plugins as in `Image.open`: a colour-map
/// type of 0 or 1, a non-zero width and height, a pixel depth of 1, 8, 16, 24 or 32, an image
/// type of 1, 2, 3, 9, 10 or 11, and with a colour map, a map depth of 16, 24 or 32.
pub(crate) fn is_tga(header: Header<'_>) -> Verdict {
    verdict(|| {
        let b = Reader::new(header).read(HEADER)?;
        Ok(b.len() == HEADER
            && b[1] <= 1
            && le16(b, 12).is_some_and(|w| w > 0)
            && le16(b, 14).is_some_and(|h| h > 0)
            && [1, 8, 16, 24, 32].contains(&b[16])
            && [1, 2, 3, 9, 10, 11].contains(&b[2])
            && (b[1] == 0 || [16, 24, 32].contains(&b[7])))
    })
}

/// Decodes the image; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let header = bytes.get(..HEADER).ok_or_else(|| Error::malformed(FORMAT, "shorter than the 18-byte header"))?;
    let id_len = usize::from(header[0]);
    let has_map = header[1] == 1;
    let image_type = header[2];
    let field = |at: usize| usize::from(le16(header, at).unwrap_or(0));
    let (map_start, map_len, map_depth) = (field(3), field(5), header[7]);
    let (width, height) = (field(12), field(14));
    let (depth, descriptor) = (header[16], header[17]);
    if header[1] > 1 || width == 0 || height == 0 || ![1, 8, 16, 24, 32].contains(&depth) {
        return Err(Error::malformed(FORMAT, "not a TGA file"));
    }
    let unsupported = |what: &str| Error::unsupported(FORMAT, what);
    let compressed = image_type & 8 != 0;
    let layout = match (image_type, depth) {
        (1 | 9, 8) if has_map => Layout::Index { bytes: 1 },
        (1 | 9, 8) => return Err(unsupported("a colour-mapped image without a colour map")),
        (3 | 11, 1) if has_map => return Err(unsupported("a 1-bit image with a colour map")),
        (3, 1) => Layout::Bilevel,
        (11, 1) => return Err(truncated()),
        (3 | 11, 8) => Layout::Index { bytes: 1 },
        (3 | 11, 16) => Layout::Index { bytes: 2 },
        (2 | 10, _) if has_map => return Err(unsupported("a true-colour image with a colour map")),
        (2 | 10, 16) => Layout::Bgr15,
        (2 | 10, 24) => Layout::Bgr { bytes: 3 },
        (2 | 10, 32) => Layout::Bgr { bytes: 4 },
        (1 | 2 | 3 | 9 | 10 | 11, _) => {
            return Err(unsupported(format!("image type {image_type} with {depth} bits per pixel").as_str()));
        }
        _ => return Err(Error::malformed(FORMAT, format!("unknown TGA mode {image_type}"))),
    };
    let mut offset = HEADER + id_len;
    let palette = if has_map {
        let entry = match map_depth {
            16 => 2,
            24 => 3,
            32 => 4,
            _ => return Err(Error::malformed(FORMAT, format!("unknown TGA map depth {map_depth}"))),
        };
        if map_start + map_len > 256 {
            return Err(Error::malformed(FORMAT, "invalid palette size"));
        }
        let stored = bytes.get(offset.min(bytes.len())..).unwrap_or_default();
        let stored = stored.get(..map_len * entry).ok_or_else(truncated)?;
        offset += map_len * entry;
        Some(colour_map(stored, map_start, entry))
    } else {
        None
    };
    if matches!(layout, Layout::Bgr15 | Layout::Bgr { bytes: 4 }) && bytes.len() < 26 {
        return Err(Error::malformed(FORMAT, "an RGBA file shorter than its 26-byte footer"));
    }
    limits.check(width as u64, height as u64)?;
    let data = bytes.get(offset..).unwrap_or_default();
    let row_bytes = layout.row_bytes(width);
    let rows = if compressed {
        let pixel = match layout {
            Layout::Index { bytes } | Layout::Bgr { bytes } => bytes,
            Layout::Bgr15 => 2,
            Layout::Bilevel => return Err(truncated()),
        };
        rle_rows(data, pixel, row_bytes, height)?
    } else {
        data.get(..row_bytes * height).ok_or_else(truncated)?.to_vec()
    };
    let top_down = descriptor & 0x20 != 0;
    let mirrored = descriptor & 0x10 != 0;
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (stored_y, row) in rows.chunks_exact(row_bytes).enumerate() {
        let y = if top_down { stored_y } else { height - 1 - stored_y };
        let Some(out) = rgb.get_mut(y * width * 3..(y + 1) * width * 3) else { continue };
        for (x, px) in out.chunks_exact_mut(3).enumerate() {
            let source_x = if mirrored { width - 1 - x } else { x };
            px.copy_from_slice(&pixel_rgb(layout, row, source_x, palette.as_ref()));
        }
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}

/// The 256-entry RGB colour map: `start` black entries, then the stored ones (`BGRA;15Z`,
/// `BGR` or `BGRA`), black after them.
fn colour_map(stored: &[u8], start: usize, entry: usize) -> [[u8; 3]; 256] {
    let mut map = [[0u8; 3]; 256];
    for (slot, e) in map.iter_mut().skip(start).zip(stored.chunks_exact(entry)) {
        *slot = if entry == 2 { bgr15(e[0], e[1]) } else { [e[2], e[1], e[0]] };
    }
    map
}

/// `ImagingUnpackBGRA15Z`'s colour channels: 5 bits each, `v * 255 / 31`.
fn bgr15(lo: u8, hi: u8) -> [u8; 3] {
    let v = u32::from(lo) | u32::from(hi) << 8;
    let channel = |shift: u32| (((v >> shift) & 31) * 255 / 31) as u8;
    [channel(10), channel(5), channel(0)]
}

fn pixel_rgb(layout: Layout, row: &[u8], x: usize, palette: Option<&[[u8; 3]; 256]>) -> [u8; 3] {
    match layout {
        Layout::Bilevel => {
            let set = row.get(x / 8).is_some_and(|b| (b >> (7 - x % 8)) & 1 == 1);
            [if set { 255 } else { 0 }; 3]
        }
        Layout::Index { bytes } => {
            let v = row.get(x * bytes).copied().unwrap_or(0);
            palette.map_or([v; 3], |p| p[usize::from(v)])
        }
        Layout::Bgr15 => bgr15(row.get(x * 2).copied().unwrap_or(0), row.get(x * 2 + 1).copied().unwrap_or(0)),
        Layout::Bgr { bytes } => match row.get(x * bytes..x * bytes + 3) {
            Some(p) => [p[2], p[1], p[0]],
            None => [0; 3],
        },
    }
}

/// `ImagingTgaRleDecode`: packets of a header byte (`n = (b & 0x7f) + 1` pixels) followed by
/// one pixel repeated (`b & 0x80`, which must not run past the row) or `n` literal pixels
/// (which continue on the next rows). Returns `height` rows in stored order; data that ends
/// before them is truncated.
fn rle_rows(data: &[u8], pixel: usize, row_bytes: usize, height: usize) -> Result<Vec<u8>> {
    let total = row_bytes * height;
    let mut rows = Vec::with_capacity(total.min(data.len().saturating_mul(128)));
    let mut x = 0;
    let mut at = 0;
    while rows.len() < total {
        let &packet = data.get(at).ok_or_else(truncated)?;
        let n = pixel * (usize::from(packet & 0x7f) + 1);
        if packet & 0x80 != 0 {
            let value = data.get(at + 1..at + 1 + pixel).ok_or_else(truncated)?;
            if x + n > row_bytes {
                return Err(Error::malformed(FORMAT, "buffer overrun when reading image file"));
            }
            for _ in 0..n / pixel {
                rows.extend_from_slice(value);
            }
            x = (x + n) % row_bytes;
            at += 1 + pixel;
        } else {
            let literal = data.get(at + 1..at + 1 + n).ok_or_else(truncated)?;
            let keep = literal.len().min(total - rows.len());
            rows.extend_from_slice(&literal[..keep]);
            x = (x + keep) % row_bytes;
            at += 1 + n;
        }
    }
    Ok(rows)
}
