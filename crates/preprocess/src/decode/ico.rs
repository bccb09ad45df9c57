//! Windows icons and cursors, as Pillow's `IcoImagePlugin` and `CurImagePlugin` load them, then
//! `convert("RGB")`.
//!
//! ICO (`IcoFile`): the directory is sorted by colour depth, then (stably) by area, largest
//! first, and the first entry is loaded: an embedded PNG, or a DIB whose header height counts
//! the XOR image and the AND mask together (the XOR image is the first half of the rows). The
//! mask becomes the alpha channel, which `convert("RGB")` drops, so only its presence matters:
//! a mask shorter than the image is Pillow's `ValueError`.
//!
//! CUR (`CurImageFile`): the first entry, replaced by any later one both wider and taller, read
//! as a DIB of half its height. A bilevel or gray bitmap (`1`/`L`) is read at full height and
//! becomes `LA`: the gray of the XOR half where the AND half is black, blended by
//! `paste(xor, mask=invert(and))` onto black.

use super::Decoded;
use super::bmp::{Bitmap, Mode};
use super::bytes::{le16, le32};
use super::open_checks::{Header, Reader, Verdict, verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";

/// One directory entry, as `IcoFile` reads it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    width: u32,
    height: u32,
    bpp: u16,
    size: u32,
    offset: u32,
    color_depth: u32,
}

/// Decodes the icon Pillow picks from an ICO file.
pub fn decode_ico(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let format = "ICO";
    let count = usize::from(le16(bytes, 4).ok_or_else(|| truncated(format, "header"))?);
    let mut entries = Vec::with_capacity(count);
    for i in 0..count {
        let s = bytes.get(6 + 16 * i..6 + 16 * (i + 1)).ok_or_else(|| truncated(format, "directory"))?;
        let (width, height, nb_color) = (u32::from(s[0]), u32::from(s[1]), s[2]);
        let bpp = le16(s, 6).unwrap_or(0);
        // Python's `bpp or (nb_color != 0 and ceil(log(nb_color, 2))) or 256`.
        let from_colors = if nb_color != 0 { (f64::from(nb_color).ln() / 2f64.ln()).ceil() as u32 } else { 0 };
        let color_depth = if bpp != 0 {
            u32::from(bpp)
        } else if from_colors != 0 {
            from_colors
        } else {
            256
        };
        entries.push(Entry {
            width: if width == 0 { 256 } else { width },
            height: if height == 0 { 256 } else { height },
            bpp,
            size: le32(s, 8).unwrap_or(0),
            offset: le32(s, 12).unwrap_or(0),
            color_depth,
        });
    }
    entries.sort_by_key(|e| e.color_depth);
    entries.sort_by_key(|e| std::cmp::Reverse(e.width * e.height));
    let entry = *entries.first().ok_or_else(|| Error::malformed(format, "no images in the directory"))?;
    let at = entry.offset as usize;
    if bytes.get(at..at.saturating_add(8)) == Some(PNG_MAGIC) {
        let png = super::png::decode(&bytes[at..], limits)?;
        return Ok(Decoded { image: png.image, orientation: Orientation::Normal });
    }
    let bitmap = Bitmap::parse(bytes, entry.offset.into(), 0, false, format)?;
    limits.check(bitmap.width.into(), bitmap.height.into())?;
    let (w, h) = (bitmap.width, bitmap.height / 2);
    limits.check(w.into(), h.into())?;
    let pixels = bitmap.pixels(bytes, h)?;
    check_mask(bytes, &bitmap, &entry, h)?;
    Ok(Decoded { image: bitmap.to_rgb(&pixels, h), orientation: Orientation::Normal })
}

/// `IcoFile.frame`'s mask: for a 32-bit entry the alpha bytes of the XOR image (which must all
/// be in the file), else the 1-bit AND mask ending at the entry's end (which must hold every
/// row). Its pixels do not reach RGB.
fn check_mask(bytes: &[u8], bitmap: &Bitmap, entry: &Entry, h: u32) -> Result<()> {
    let (w, h) = (u64::from(bitmap.width), u64::from(h));
    let short = || Error::malformed("ICO", "not enough image data for the mask");
    if entry.bpp == 32 {
        let end = bitmap.data_at().saturating_add(w * h * 4);
        return if end <= bytes.len() as u64 { Ok(()) } else { Err(short()) };
    }
    let padded = w.div_ceil(32) * 32;
    let total = padded * h / 8;
    let start = (u64::from(entry.offset) + u64::from(entry.size)).checked_sub(total).ok_or_else(short)?;
    let available = (bytes.len() as u64).saturating_sub(start).min(total);
    // The raw decoder's need for `1;I` rows of `padded / 8` bytes.
    let needed = (h - 1) * (padded / 8) + w.div_ceil(8);
    if available < needed { Err(short()) } else { Ok(()) }
}

/// `CurImagePlugin._open`, which reads the first (or largest) cursor entry and then the BMP
/// header it points to (`BmpImageFile._bitmap`). `No` where these raise a `SyntaxError` (or an
/// error Pillow turns into one: a short read, an index past the data, no entries) or the size
/// halves to nothing, so the next plugin (TGA, for an uncompressed true-colour TGA, whose
/// bytes start the same) gets the file. `Yes` also where `_bitmap` raises another error (an
/// unknown header size, depth, compression, bit-field layout or palette size): `Image.open`
/// fails with it there, inside the CUR plugin.
pub(crate) fn is_cur(header: Header<'_>) -> Verdict {
    verdict(|| {
        let mut r = Reader::new(header);
        let le16 = |b: &[u8], at: usize| b.get(at..at + 2).map(|s| u32::from(u16::from_le_bytes([s[0], s[1]])));
        let le32 = |b: &[u8], at: usize| b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
        let Some(count) = le16(r.read(6)?, 4) else { return Ok(false) };
        let mut best: &[u8] = &[];
        for _ in 0..count {
            let entry = r.read(16)?;
            if best.is_empty() {
                best = entry;
                continue;
            }
            let (Some(&w), Some(&bw)) = (entry.first(), best.first()) else { return Ok(false) };
            if w > bw {
                let (Some(&h), Some(&bh)) = (entry.get(1), best.get(1)) else { return Ok(false) };
                if h > bh {
                    best = entry;
                }
            }
        }
        let Some(bitmap_at) = le32(best, 12) else { return Ok(false) };
        if bitmap_at != 0 {
            r.pos = bitmap_at as usize;
        }
        let Some(header_size) = le32(r.read(4)?, 0) else { return Ok(false) };
        let rest = header_size.saturating_sub(4) as usize;
        let data = r.read(rest)?;
        if data.len() < rest {
            return Ok(true); // "Truncated File Read"
        }
        let field16 = |at| le16(data, at).unwrap_or(0);
        let field32 = |at| le32(data, at).unwrap_or(0);
        let (width, height, bits, compression, colours) = match header_size {
            12 => (field16(0), field16(2), field16(6), 0, 0),
            40 | 52 | 56 | 64 | 108 | 124 => {
                let flipped = data.get(7) == Some(&0xFF);
                let height = if flipped { 0u32.wrapping_sub(field32(4)) } else { field32(4) };
                (field32(0), height, field16(10), field32(12), field32(28))
            }
            _ => return Ok(true), // "Unsupported BMP header type"
        };
        if compression == 3 {
            let masks: Vec<u32> = if data.len() >= 48 {
                let count = if data.len() >= 52 { 4 } else { 3 };
                (0..count).map(|i| field32(36 + i * 4)).chain((count == 3).then_some(0)).collect()
            } else {
                let mut masks = Vec::new();
                for _ in 0..3 {
                    let Some(mask) = le32(r.read(4)?, 0) else { return Ok(false) };
                    masks.push(mask);
                }
                masks.push(0);
                masks
            };
            let rgba = (masks[0], masks[1], masks[2], masks[3]);
            let rgb = (masks[0], masks[1], masks[2]);
            let supported = match bits {
                32 => [
                    (0xFF0000, 0xFF00, 0xFF, 0),
                    (0xFF000000, 0xFF0000, 0xFF00, 0),
                    (0xFF000000, 0xFF00, 0xFF, 0),
                    (0xFF000000, 0xFF0000, 0xFF00, 0xFF),
                    (0xFF, 0xFF00, 0xFF0000, 0xFF000000),
                    (0xFF0000, 0xFF00, 0xFF, 0xFF000000),
                    (0xFF000000, 0xFF00, 0xFF, 0xFF0000),
                    (0, 0, 0, 0),
                ]
                .contains(&rgba),
                24 => rgb == (0xFF0000, 0xFF00, 0xFF),
                16 => rgb == (0xF800, 0x7E0, 0x1F) || rgb == (0x7C00, 0x3E0, 0x1F),
                _ => false,
            };
            if !supported {
                return Ok(true); // "Unsupported BMP bitfields layout"
            }
        } else if !matches!(compression, 0..=2) {
            return Ok(true); // "Unsupported BMP compression"
        }
        match bits {
            1 | 4 | 8 => {
                let colours = if colours == 0 { 1u64 << bits } else { u64::from(colours) };
                if colours > 65536 {
                    return Ok(true); // "Unsupported BMP Palette size"
                }
            }
            16 | 24 | 32 => {}
            _ => return Ok(true), // "Unsupported BMP pixel depth"
        }
        // The cursor is the bitmap's top half.
        Ok(width > 0 && height / 2 > 0)
    })
}

/// Decodes a cursor as Pillow's `CurImageFile` loads it.
pub fn decode_cur(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let format = "CUR";
    let count = usize::from(le16(bytes, 4).ok_or_else(|| truncated(format, "header"))?);
    let mut chosen: Option<&[u8]> = None;
    for i in 0..count {
        let s = bytes.get(6 + 16 * i..).map(|s| &s[..s.len().min(16)]).unwrap_or(&[]);
        match chosen {
            None => chosen = Some(s),
            Some(m) if s.first() > m.first() && s.get(1) > m.get(1) => chosen = Some(s),
            _ => {}
        }
    }
    let chosen = chosen.ok_or_else(|| Error::malformed(format, "No cursors were found"))?;
    let offset = le32(chosen, 12).ok_or_else(|| truncated(format, "directory"))?;
    // `_bitmap(header=0)` reads at the current position, after the directory.
    let header = if offset == 0 { (6 + 16 * count as u64).min(bytes.len() as u64) } else { u64::from(offset) };
    let bitmap = Bitmap::parse(bytes, header, 0, offset == 22, format)?;
    limits.check(bitmap.width.into(), bitmap.height.into())?;
    let (w, h) = (bitmap.width, bitmap.height / 2);
    limits.check(w.into(), h.into())?;
    if !matches!(bitmap.mode, Mode::One | Mode::L) {
        let pixels = bitmap.pixels(bytes, h)?;
        return Ok(Decoded { image: bitmap.to_rgb(&pixels, h), orientation: Orientation::Normal });
    }
    // Rows top first: the AND mask is the top half of the loaded image, the XOR image below.
    let full = bitmap.pixels(bytes, bitmap.height)?;
    let half = w as usize * h as usize;
    let (and, xor) = full.split_at(half);
    let rgb: Vec<u8> = and.iter().zip(xor).flat_map(|(&a, &x)| [muldiv255(x, 255 - a); 3]).collect();
    Ok(Decoded { image: RgbImage::from_parts(w, h, rgb), orientation: Orientation::Normal })
}

/// libImaging's `MULDIV255(a, b)`: `a * b / 255` rounded, as `Paste.c` blends.
fn muldiv255(a: u8, b: u8) -> u8 {
    let t = u32::from(a) * u32::from(b) + 128;
    (((t >> 8) + t) >> 8) as u8
}

fn truncated(format: &'static str, what: &str) -> Error {
    Error::Truncated { format, detail: format!("{what} ends early") }
}
