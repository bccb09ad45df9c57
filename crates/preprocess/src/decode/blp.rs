//! BLP (Blizzard Mipmap) as Pillow's `BlpImagePlugin` reads it, then `convert("RGB")`: only
//! the first mipmap.
//!
//! The header (`_open`): `BLP1` has compression, an alpha flag and the size as little-endian
//! 32-bit fields, then the encoding (24 bytes in all); `BLP2` has compression, then the
//! encoding, the alpha flag and the alpha encoding as single signed bytes, then the size at
//! byte 12 (20 bytes). A shorter header, or a zero width or height, is not BLP. The mode is
//! RGBA with a non-zero alpha flag, else RGB. After the header come the sixteen mipmap offsets
//! and lengths; every read past the end of the file is "Truncated File Read".
//!
//! `BLP1`:
//! - compression 0: a JPEG made of a shared header (its length, then its bytes) followed by
//!   the first mipmap's bytes (from its offset, or right after the shared header when the
//!   offset lies before it), decoded by the JPEG plugin (a 4-component JPEG's data taken as
//!   CMYK whatever its Adobe marker says: the plugin sets `jpegmode`, the second tile argument,
//!   to `CMYK`), converted to RGB and stored with the rawmode `BGR`: red and blue swapped, the
//!   bytes laid into rows of the BLP's width;
//! - compression 1 with encoding 4 or 5: a 256-entry BGRA palette after the mipmap table,
//!   then (not at the mipmap's offset) the mipmap's length of palette indices.
//!
//! `BLP2` reads the palette in every case, then goes to the first mipmap's offset; with
//! compression 1, encoding 1 is palette indices as in `BLP1`, encoding 2 is DXT1 (alpha
//! encoding 0), DXT3 (1) or DXT5 (7) decoded by the plugin's own Python block decoders
//! (`blp_dxt.rs`). Anything else (JPEG `BLP2`, raw BGRA encoding 3) is refused as Pillow
//! refuses it.
//!
//! The plugin hands what it decoded to Pillow's raw decoder, which lays the bytes into rows of
//! the image's width, four bytes a pixel in RGBA mode and three in RGB (whatever the decoder
//! made of them), and raises "not enough image data" when they do not fill the image; excess
//! bytes are ignored. `convert("RGB")` then drops alpha. The size is checked against the
//! limits before any pixel buffer exists, and the data the decode reads is checked to be in
//! the file before it starts.

use super::Decoded;
use super::blp_dxt::{Dxt, dxt_rgb};
use super::bytes::le32;
use super::jpeg::{FourComponents, decode_as};
use super::open_checks::{Header as OpenHeader, Verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "BLP";

/// Where the mipmap table starts (the tile offset) in each version.
const BLP1_TABLE: usize = 28;
const BLP2_TABLE: usize = 20;
/// The sixteen offsets and sixteen lengths.
const TABLE_BYTES: usize = 128;
const PALETTE_BYTES: usize = 1024;

/// What `_open` reads.
#[derive(Debug, Clone, Copy)]
struct Header {
    blp2: bool,
    compression: i32,
    encoding: i32,
    alpha: bool,
    alpha_encoding: i8,
    width: u32,
    height: u32,
}

/// The header as `_open` reads it; `None` where it raises (too short) or finds a zero size.
fn header(bytes: &[u8]) -> Option<Header> {
    let blp2 = bytes.starts_with(b"BLP2");
    if !blp2 && !bytes.starts_with(b"BLP1") {
        return None;
    }
    let field = |at| le32(bytes, at);
    let (width, height) = (field(12)?, field(16)?);
    let header = if blp2 {
        let signed = |at: usize| bytes.get(at).map(|&b| b as i8);
        Header {
            blp2,
            compression: field(4)? as i32,
            encoding: i32::from(signed(8)?),
            alpha: signed(9)? != 0,
            alpha_encoding: signed(10)?,
            width,
            height,
        }
    } else {
        let encoding = field(20)? as i32;
        Header {
            blp2,
            compression: field(4)? as i32,
            encoding,
            alpha: field(8)? != 0,
            alpha_encoding: 0,
            width,
            height,
        }
    };
    (width > 0 && height > 0).then_some(header)
}

/// `BlpImageFile._open`: the whole header (24 bytes for `BLP1`, 20 for `BLP2`) and a non-zero
/// size.
pub(crate) fn is_blp(header_bytes: OpenHeader<'_>) -> Verdict {
    let bytes = header_bytes.bytes;
    let needed = if bytes.starts_with(b"BLP1") { 24 } else { 20 };
    if bytes.len() < needed && !header_bytes.complete {
        Verdict::NeedMore
    } else if header(bytes).is_some() {
        Verdict::Yes
    } else {
        Verdict::No
    }
}

fn truncated_read() -> Error {
    Error::Truncated { format: FORMAT, detail: "Truncated File Read".into() }
}

fn not_enough() -> Error {
    Error::Truncated { format: FORMAT, detail: "not enough image data".into() }
}

/// `_safe_read(length)` at `at`: the bytes (none for a length of 0, wherever `at` is), or
/// "Truncated File Read" when the file ends first.
fn read(bytes: &[u8], at: usize, length: usize) -> Result<&[u8]> {
    if length == 0 {
        return Ok(&[]);
    }
    at.checked_add(length).and_then(|end| bytes.get(at..end)).ok_or_else(truncated_read)
}

/// Decodes the first mipmap; the size is checked against `limits` before any pixel buffer
/// is allocated.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let header = header(bytes).ok_or_else(|| Error::malformed(FORMAT, "not a BLP file"))?;
    limits.check(header.width.into(), header.height.into())?;
    let table_at = if header.blp2 { BLP2_TABLE } else { BLP1_TABLE };
    let table = read(bytes, table_at, TABLE_BYTES)?;
    let (offset, length) = (le32(table, 0).unwrap_or(0) as usize, le32(table, 64).unwrap_or(0) as usize);
    let after_table = table_at + TABLE_BYTES;
    let (w, h) = (header.width as usize, header.height as usize);
    let rgb = if header.blp2 {
        let palette = read(bytes, after_table, PALETTE_BYTES)?;
        if header.compression != 1 {
            return Err(unsupported(format!("Unknown BLP compression {}", header.compression)));
        }
        match header.encoding {
            1 => indexed(palette, read(bytes, offset, length)?, w, h)?,
            2 => {
                let dxt = match header.alpha_encoding {
                    0 => Dxt::Dxt1 { alpha: header.alpha },
                    1 => Dxt::Dxt3,
                    7 => Dxt::Dxt5,
                    other => return Err(unsupported(format!("Unsupported alpha encoding {other}"))),
                };
                let rows = h.div_ceil(4);
                let data = rows.checked_mul(w.div_ceil(4) * dxt.block_bytes()).ok_or_else(truncated_read)?;
                dxt_rgb(read(bytes, offset, data)?, dxt, header.alpha, w, h)
            }
            other => return Err(unsupported(format!("Unknown BLP encoding {other}"))),
        }
    } else {
        match (header.compression, header.encoding) {
            (0, _) => jpeg(bytes, after_table, offset, length, w, h, limits)?,
            (1, 4 | 5) => {
                let palette = read(bytes, after_table, PALETTE_BYTES)?;
                indexed(palette, read(bytes, after_table + PALETTE_BYTES, length)?, w, h)?
            }
            (1, other) => return Err(unsupported(format!("Unsupported BLP encoding {other}"))),
            (other, _) => return Err(unsupported(format!("Unsupported BLP compression {other}"))),
        }
    };
    Ok(Decoded { image: RgbImage::from_parts(header.width, header.height, rgb), orientation: Orientation::Normal })
}

fn unsupported(detail: String) -> Error {
    Error::Unsupported { format: FORMAT, detail }
}

/// `_read_bgra`: each index's palette entry (BGRA, alpha dropped by the conversion); the
/// image takes the first `w * h` indices.
fn indexed(palette: &[u8], indices: &[u8], w: usize, h: usize) -> Result<Vec<u8>> {
    let indices = indices.get(..w * h).ok_or_else(not_enough)?;
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    for (out, &i) in rgb.chunks_exact_mut(3).zip(indices) {
        let at = usize::from(i) * 4;
        out.copy_from_slice(&[palette[at + 2], palette[at + 1], palette[at]]);
    }
    Ok(rgb)
}

/// `_decode_jpeg_stream`: the shared JPEG header after the mipmap table, the first mipmap's
/// bytes appended, decoded as the JPEG plugin does (CMYK data taken as CMYK), its RGB bytes
/// read back as `BGR` into rows of the BLP's width.
fn jpeg(bytes: &[u8], at: usize, offset: usize, length: usize, w: usize, h: usize, limits: &Limits) -> Result<Vec<u8>> {
    let header_length = read(bytes, at, 4).map(|b| le32(b, 0).unwrap_or(0) as usize)?;
    let shared = read(bytes, at + 4, header_length)?;
    // The plugin reads on to the mipmap's offset, never back.
    let tell = at + 4 + header_length;
    let skip = offset.saturating_sub(tell);
    read(bytes, tell, skip)?;
    let data = read(bytes, tell + skip, length)?;
    let stream = [shared, data].concat();
    if !stream.starts_with(b"\xFF\xD8\xFF") {
        return Err(Error::malformed(FORMAT, "not a JPEG file"));
    }
    let decoded = decode_as(&stream, limits, FourComponents::Cmyk).map_err(as_blp)?;
    let jpeg_rgb = decoded.image.data();
    let jpeg_rgb = jpeg_rgb.get(..w * h * 3).ok_or_else(not_enough)?;
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    for (out, bgr) in rgb.chunks_exact_mut(3).zip(jpeg_rgb.chunks_exact(3)) {
        out.copy_from_slice(&[bgr[2], bgr[1], bgr[0]]);
    }
    Ok(rgb)
}

/// An error of the embedded JPEG, named as BLP's (the file Pillow fails on is a BLP file).
fn as_blp(error: Error) -> Error {
    match error {
        Error::Malformed { detail, .. } => Error::Malformed { format: FORMAT, detail },
        Error::Truncated { detail, .. } => Error::Truncated { format: FORMAT, detail },
        Error::Unsupported { detail, .. } => Error::Unsupported { format: FORMAT, detail },
        other => other,
    }
}
