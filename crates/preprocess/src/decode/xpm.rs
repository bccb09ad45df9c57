//! X11 pixmaps (XPM) as Pillow's `XpmImagePlugin` loads them, then `convert("RGB")`:
//! - after `/* XPM */`, the first line starting `"W H N B` (decimal, single spaces) gives the
//!   size, the number of colours and the characters per pixel;
//! - the next `N` lines are colours: the key is the `B` characters after the first, the rest
//!   (less its last two characters) is split into words taken in pairs, and the first `c` pair
//!   gives `None` (black) or `#hex` (the low 24 bits as RGB); any other colour, or a line with no
//!   `c` pair, is an error ("cannot read this XPM file"); a repeated key takes the last colour;
//! - pixels come from the lines that follow, each the text between its first and last `"`
//!   (one `/* pixels */` line skipped), cut into keys of `B` characters, read until `W * H`
//!   pixels are there; an unknown key is an error ("unknown color"), too few pixels "not
//!   enough image data". Each pixel is its key's colour: mode `P` (up to 256 colours) looks it
//!   up in the palette, mode `RGB`/`RGBA` stores it, and both convert to the same RGB.

use super::Decoded;
use super::open_checks::{Header, Reader, python_int};
use crate::{Error, Limits, Orientation, Result, RgbImage};
use std::collections::HashMap;

const FORMAT: &str = "XPM";

/// Decodes an XPM file; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let mut r = Reader::new(Header { bytes, complete: true });
    if r.read(9).ok() != Some(b"/* XPM */".as_slice()) {
        return Err(Error::malformed(FORMAT, "not an XPM file"));
    }
    let values = loop {
        let text = next_line(&mut r);
        if text.is_empty() {
            return Err(Error::malformed(FORMAT, "broken XPM file"));
        }
        if let Some(values) = size_line(text) {
            break values;
        }
    };
    let [width, height, colours, bpp] = values.map(python_int);
    let (Some(width), Some(height), Some(colours), Some(bpp)) = (width, height, colours, bpp) else {
        return Err(Error::malformed(FORMAT, "a size line with an empty number"));
    };
    if width <= 0 || height <= 0 {
        return Err(Error::ZeroSize { width: width.max(0) as u64, height: height.max(0) as u64 });
    }
    limits.check(width as u64, height as u64)?;
    let bpp = usize::try_from(bpp).map_err(|_| Error::malformed(FORMAT, "characters per pixel"))?;

    let mut palette: HashMap<&[u8], [u8; 3]> = HashMap::new();
    for _ in 0..colours {
        let text = next_line(&mut r);
        let text = &text[..text.iter().rposition(|b| !is_space(b)).map_or(0, |i| i + 1)];
        let key = text.get(1..(bpp + 1).min(text.len())).unwrap_or(&[]);
        let words = text.get(bpp + 1..text.len().saturating_sub(2)).unwrap_or(&[]);
        let words: Vec<&[u8]> = words.split(is_space).filter(|w| !w.is_empty()).collect();
        let colour = words.chunks(2).find(|pair| pair[0] == b"c").ok_or_else(cannot_read)?;
        let value = colour.get(1).ok_or_else(|| Error::malformed(FORMAT, "a colour key without a value"))?;
        let rgb = if *value == b"None" {
            [0; 3]
        } else if let Some(hex) = value.strip_prefix(b"#") {
            let v = python_hex_low_bits(hex).ok_or_else(cannot_read)?;
            [(v >> 16) as u8, (v >> 8) as u8, v as u8]
        } else {
            return Err(cannot_read());
        };
        palette.insert(key, rgb);
    }

    let (width, height) = (width as usize, height as usize);
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    let mut filled = 0;
    let mut pixel_header = false;
    while filled < width * height {
        let text = next_line(&mut r);
        if text.is_empty() {
            break;
        }
        let trimmed = &text[..text.iter().rposition(|b| !is_space(b)).map_or(0, |i| i + 1)];
        if trimmed == b"/* pixels */" && !pixel_header {
            pixel_header = true;
            continue;
        }
        if bpp == 0 {
            return Err(Error::malformed(FORMAT, "zero characters per pixel"));
        }
        let first = text.iter().position(|&b| b == b'"');
        let last = text.iter().rposition(|&b| b == b'"');
        let inner = match (first, last) {
            (Some(a), Some(b)) if a < b => &text[a + 1..b],
            _ => &[][..],
        };
        for key in inner.chunks(bpp) {
            let colour = palette.get(key).ok_or_else(|| Error::malformed(FORMAT, "unknown color"))?;
            if let Some(px) = rgb.get_mut(filled * 3..filled * 3 + 3) {
                px.copy_from_slice(colour);
            }
            filled += 1;
        }
    }
    if filled < width * height {
        return Err(Error::Truncated { format: FORMAT, detail: "not enough image data".into() });
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}

/// `fp.readline()` on the whole file (empty at its end).
fn next_line<'a>(r: &mut Reader<'a>) -> &'a [u8] {
    r.readline().unwrap_or(&[])
}

/// The four numbers of `xpm_head` (`"([0-9]*) ([0-9]*) ([0-9]*) ([0-9]*)`, matched at the
/// line's start), each possibly empty.
fn size_line(text: &[u8]) -> Option<[&[u8]; 4]> {
    let mut rest = text.strip_prefix(b"\"")?;
    let mut numbers = [&[][..]; 4];
    for (i, number) in numbers.iter_mut().enumerate() {
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        *number = &rest[..digits];
        rest = &rest[digits..];
        if i < 3 {
            rest = rest.strip_prefix(b" ")?;
        }
    }
    Some(numbers)
}

/// Python's `int(text, 16)` (a sign, an optional `0x`, underscores between digits), reduced to
/// its low 32 bits in two's complement: the colour uses bits 0 to 23.
fn python_hex_low_bits(text: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(text).ok()?.trim();
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let body =
        body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")).map_or(body, |b| b.strip_prefix('_').unwrap_or(b));
    if body.is_empty() || body.starts_with('_') || body.ends_with('_') || body.contains("__") {
        return None;
    }
    let mut value = 0u32;
    for c in body.chars().filter(|&c| c != '_') {
        value = value.wrapping_shl(4) | c.to_digit(16)?;
    }
    Some(if negative { value.wrapping_neg() } else { value })
}

/// Python's `bytes.isspace` set, which `rstrip()` and `split()` use.
fn is_space(b: &u8) -> bool {
    b" \t\n\r\x0b\x0c".contains(b)
}

fn cannot_read() -> Error {
    Error::malformed(FORMAT, "cannot read this XPM file")
}
