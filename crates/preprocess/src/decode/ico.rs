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
