//! IFUNC/LabEye IM files as Pillow's `ImImagePlugin` loads their first frame, then
//! `convert("RGB")`.
//!
//! A text header of `Key: value` lines (each under 100 bytes, at least one with a known key),
//! ended by `\0` or `\x1a`, then bytes up to a `\x1a`; a 768-byte lookup table follows when a
//! `Lut` line was seen, then the raw rows, stored bottom-up. `Image type` names the mode and the
//! raw layout through Pillow's `OPEN` table (a value outside it is taken as the mode itself, the
//! layout staying the last one named); a lookup table that is not gray turns L and P into P
//! (8-bit indices, the table as a planar palette) and LA and PA into PA. The pairs of mode and
//! layout Pillow unpacks are read (see [`Layout`]); the other pairs, which Pillow refuses with
//! "unknown raw mode", are refused. `LAB` (an `Image type` outside the table) with the `L`
//! layout is Pillow's `LAB` image with L* unpacked (band 0) and a*, b* left zero, converted by
//! [`cielab`](super::cielab)'s Little CMS transform; with any other layout it is refused. Rows
//! shorter than the image are "image file is truncated".

mod layout;

pub(super) use layout::float_gray;

use super::Decoded;
use super::cielab;
use super::open_checks::{Header, NeedMore, Reader, Verdict, python_int};
use crate::{Error, Limits, Orientation, Result, RgbImage};
use layout::{Layout, bit_stream, layout, unpack_row};

const FORMAT: &str = "IM";

/// What the header says, as `ImImageFile._open` leaves it.
pub(crate) struct ImHeader {
    /// `Image type` (mapped through `OPEN`), default `L`.
    mode: Vec<u8>,
    /// The raw layout, default `L`.
    rawmode: String,
    /// `Image size (x*y)`: at least two numbers (Pillow's size tuple), the first two positive.
    size: Vec<Number>,
    /// The lookup table (768 bytes, fewer where the file ends), when a `Lut` line announced one.
    lut: Option<Vec<u8>>,
    /// Where the rows start.
    data_at: usize,
}

/// A number as Pillow's `number` parses it: `int(s)`, else `float(s)`.
#[derive(Clone, Copy)]
enum Number {
    Int(i64),
    Float(f64),
}

impl Number {
    fn parse(text: &[u8]) -> Option<Number> {
        python_int(text)
            .map(Number::Int)
            .or_else(|| std::str::from_utf8(text).ok()?.trim().parse().ok().map(Number::Float))
    }

    fn positive(self) -> bool {
        match self {
            Number::Int(n) => n > 0,
            Number::Float(f) => f > 0.0,
        }
    }
}

/// Pillow's `OPEN` table: an `Image type` value to its mode and raw layout.
fn open_entry(value: &[u8]) -> Option<(&'static str, String)> {
    const FIXED: [(&str, &str, &str); 21] = [
        ("0 1 image", "1", "1"),
        ("L 1 image", "1", "1"),
        ("Greyscale image", "L", "L"),
        ("Grayscale image", "L", "L"),
        ("RGB image", "RGB", "RGB;L"),
        ("RLB image", "RGB", "RLB"),
        ("RYB image", "RGB", "RLB"),
        ("B1 image", "1", "1"),
        ("B2 image", "P", "P;2"),
        ("B4 image", "P", "P;4"),
        ("X 24 image", "RGB", "RGB"),
        ("L 32 S image", "I", "I;32"),
        ("L 32 F image", "F", "F;32"),
        ("RGB3 image", "RGB", "RGB;T"),
        ("RYB3 image", "RGB", "RYB;T"),
        ("LA image", "LA", "LA;L"),
        ("PA image", "LA", "PA;L"),
        ("RGBA image", "RGBA", "RGBA;L"),
        ("RGBX image", "RGB", "RGBX;L"),
        ("CMYK image", "CMYK", "CMYK;L"),
        ("YCC image", "YCbCr", "YCbCr;L"),
    ];
    if let Some(&(_, mode, raw)) = FIXED.iter().find(|(key, _, _)| key.as_bytes() == value) {
        return Some((mode, raw.to_owned()));
    }
    let text = std::str::from_utf8(value).ok()?.strip_suffix(" image")?;
    let (star, depth) = match (text.strip_prefix("L "), text.strip_prefix("L*")) {
        (Some(depth), _) => (false, depth),
        (_, Some(depth)) => (true, depth),
        _ => return None,
    };
    // The last loop (`L*2` .. `L*32`, all float) overrides the earlier ones.
    if star
        && let Ok(bits) = depth.parse::<u32>()
        && (2..=32).contains(&bits)
        && depth == bits.to_string()
    {
        return Some(("F", format!("F;{bits}")));
    }
    match depth {
        "16" => Some(("I;16", "I;16".to_owned())),
        "16L" => Some(("I;16L", "I;16L".to_owned())),
        "16B" => Some(("I;16B", "I;16B".to_owned())),
        "32S" => Some(("I", "I;32S".to_owned())),
        "8" | "8S" | "16S" | "32" | "32F" => Some(("F", format!("F;{depth}"))),
        _ => None,
    }
}

/// `ImImageFile._open` on the header: `Ok(None)` where it raises or leaves no mode or a size
/// that is not two positive numbers (`Image.open` then tries the next plugin).
pub(crate) fn im_header(header: Header<'_>) -> Result<Option<ImHeader>, NeedMore> {
    const TAGS: [&[u8]; 9] = [
        b"Comment",
        b"Date",
        b"Digitalization equipment",
        b"File size (no of images)",
        b"Lut",
        b"Name",
        b"Scale (x,y)",
        b"Image size (x*y)",
        b"Image type",
    ];
    const NUMERIC: [&[u8]; 3] = [b"File size (no of images)", b"Scale (x,y)", b"Image size (x*y)"];
    let mut r = Reader::new(header);
    if !r.read(100)?.contains(&b'\n') {
        return Ok(None);
    }
    r.pos = 0;
    let (mut known, mut mode, mut rawmode) = (0, b"L".to_vec(), "L".to_owned());
    let (mut size, mut has_lut) = (vec![Number::Int(512); 2], false);
    let ended_by = loop {
        let first = r.read(1)?;
        if first == b"\r" {
            continue;
        }
        if matches!(first, [] | [0] | [0x1A]) {
            break first;
        }
        let rest = r.readline()?;
        if 1 + rest.len() > 100 {
            return Ok(None);
        }
        let mut line = [first, rest].concat();
        if line.ends_with(b"\r\n") {
            line.truncate(line.len() - 2);
        } else if line.ends_with(b"\n") {
            line.truncate(line.len() - 1);
        }
        // `^([A-Za-z][^:]*):[ \t]*(.*)[ \t]*$`
        let Some(colon) = line.iter().position(|&b| b == b':').filter(|_| line[0].is_ascii_alphabetic()) else {
            return Ok(None);
        };
        let key = &line[..colon];
        let mut value = &line[colon + 1..];
        while let [b' ' | b'\t', tail @ ..] = value {
            value = tail;
        }
        if NUMERIC.contains(&key) {
            let text: Vec<u8> = value.iter().map(|&b| if b == b'*' { b',' } else { b }).collect();
            // Pillow's `number` raises ValueError on anything else.
            let Some(numbers) = text.split(|&b| b == b',').map(Number::parse).collect::<Option<Vec<_>>>() else {
                return Ok(None);
            };
            if key == b"Image size (x*y)" {
                size = numbers;
            }
        }
        if key == b"Image type" {
            match open_entry(value) {
                Some((m, raw)) => (mode, rawmode) = (m.as_bytes().to_vec(), raw),
                None => mode = value.to_vec(),
            }
        }
        has_lut |= key == b"Lut";
        known += usize::from(TAGS.contains(&key));
    };
    // One number is not a tuple (a TypeError), and `ImageFile` wants a positive size.
    let size_ok = size.len() >= 2 && size[..2].iter().all(|n| n.positive());
    if known == 0 || !size_ok || mode.is_empty() {
        return Ok(None);
    }
    let mut at = ended_by;
    while !at.is_empty() && at != b"\x1a" {
        at = r.read(1)?;
    }
    if at.is_empty() {
        return Ok(None);
    }
    let lut = if has_lut {
        let table = r.read(768)?;
        // Pillow's gray test indexes the table (`p[i] == p[i + 256] == p[i + 512]`, chained):
        // an index past a short table is an IndexError.
        if lut_gray(table).is_none() {
            return Ok(None);
        }
        Some(table.to_vec())
    } else {
        None
    };
    Ok(Some(ImHeader { mode, rawmode, size, lut, data_at: r.pos }))
}

/// Whether every entry of the lookup table is gray (`p[i] == p[i + 256] == p[i + 512]`), with
/// Python's chained comparison; `None` where it indexes past the table's end.
fn lut_gray(p: &[u8]) -> Option<bool> {
    let mut gray = true;
    for i in 0..256 {
        if *p.get(i)? == *p.get(i + 256)? {
            gray &= *p.get(i)? == *p.get(i + 512)?;
        } else {
            gray = false;
        }
    }
    Some(gray)
}

/// `ImImageFile._open`'s verdict on a header.
pub(crate) fn is_im(header: Header<'_>) -> Verdict {
    match im_header(header) {
        Ok(Some(_)) => Verdict::Yes,
        Ok(None) => Verdict::No,
        Err(NeedMore) => Verdict::NeedMore,
    }
}

/// Decodes an IM file's first frame; the size is checked against `limits` before any pixel
/// buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let Ok(Some(header)) = im_header(Header { bytes, complete: true }) else {
        return Err(Error::malformed(FORMAT, "not an IM file"));
    };
    let [Number::Int(width), Number::Int(height)] = header.size[..] else {
        return Err(Error::malformed(FORMAT, "the image size is not two integers"));
    };
    limits.check(width as u64, height as u64)?;
    let (mut mode, mut rawmode, mut palette) = (header.mode, header.rawmode, [[0u8; 3]; 256]);
    if let Some(lut) = header.lut
        && lut_gray(&lut) == Some(false)
    {
        match &mode[..] {
            b"L" | b"P" => (mode, rawmode) = (b"P".to_vec(), "P".to_owned()),
            b"LA" | b"PA" => (mode, rawmode) = (b"PA".to_vec(), "PA;L".to_owned()),
            _ => {}
        }
        if mode.starts_with(b"P") {
            let at = |i: usize| lut.get(i).copied().unwrap_or(0);
            palette = std::array::from_fn(|i| [at(i), at(i + 256), at(i + 512)]);
        }
    }
    let (w, h) = (width as usize, height as usize);
    let truncated = || Error::Truncated { format: FORMAT, detail: "image file is truncated".into() };
    let data = &bytes[header.data_at..];
    if mode == b"LAB" && rawmode == "L" {
        // One byte a pixel, rows bottom-up, into band 0 of Pillow's zeroed LAB image.
        if data.len() < w * h {
            return Err(truncated());
        }
        let rgb = cielab::to_rgb(w, h, FORMAT, |y, row| {
            let stored = &data[(h - 1 - y) * w..][..w];
            for (px, &l) in row.chunks_exact_mut(4).zip(stored) {
                px.copy_from_slice(&[l, 0, 0, 0]);
            }
        })?;
        return Ok(Decoded { image: RgbImage::from_parts(w as u32, h as u32, rgb), orientation: Orientation::Normal });
    }
    let Some((layout, colour)) = layout(&mode, &rawmode) else {
        let mode = String::from_utf8_lossy(&mode);
        return Err(Error::unsupported(
            FORMAT,
            format!("mode {mode} with raw mode {rawmode} (Pillow has no unpacker)"),
        ));
    };
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    if let Layout::BitStream(bits) = layout {
        bit_stream(data, bits, w, h, &mut rgb).ok_or_else(truncated)?;
        return Ok(Decoded { image: RgbImage::from_parts(w as u32, h as u32, rgb), orientation: Orientation::Normal });
    }
    let stride = layout.row_bytes(w);
    let planar = matches!(layout, Layout::Bands { planar: true, .. });
    let plane = stride * h;
    if data.len() < if planar { plane * 3 } else { plane } {
        return Err(truncated());
    }
    for (y, out) in rgb.chunks_exact_mut(w * 3).enumerate() {
        let at = (h - 1 - y) * stride;
        let planes = if planar { [0, 1, 2].map(|p| &data[p * plane + at..][..stride]) } else { [&[][..]; 3] };
        unpack_row(layout, colour, &data[at..at + stride], planes, &palette, out);
    }
    Ok(Decoded { image: RgbImage::from_parts(w as u32, h as u32, rgb), orientation: Orientation::Normal })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(lines: &str, data: &[u8]) -> Vec<u8> {
        [lines.as_bytes(), b"\x1a", data].concat()
    }

    /// The expectations are Pillow 13's on the same files.
    #[test]
    fn rows_are_bottom_up_and_the_bit_decoder_keeps_its_leftover_bits() {
        let limits = Limits::default();
        let gray = |d: &Decoded| d.image.data().iter().step_by(3).copied().collect::<Vec<_>>();
        let l = decode(&file("Image type: Greyscale image\nImage size (x*y): 2*2\n", &[1, 2, 3, 4]), &limits).unwrap();
        assert_eq!(gray(&l), [3, 4, 1, 2]);
        // 12-bit samples, 2 per row of 3 bytes: the last row's top nibble is or-ed into the next.
        let bits = file("Image type: L*12 image\nImage size (x*y): 2*2\n", &[0x0A, 0xF0, 0x0F, 0x05, 0x00, 0x00]);
        assert_eq!(gray(&decode(&bits, &limits).unwrap()), [5, 0, 10, 255]);
    }

    #[test]
    fn verdicts_and_refusals() {
        let header = |bytes: &[u8], complete| is_im(Header { bytes, complete });
        let whole = file("Image size (x*y): 2*2\nLut: 1\n", &[0; 800]);
        assert_eq!(header(&whole, true), Verdict::Yes);
        assert_eq!(header(&whole[..40], false), Verdict::NeedMore);
        assert_eq!(header(&file("Image size (x*y): 2\n", &[0; 4]), true), Verdict::No);
        assert_eq!(header(&file("Image size (x*y): 2*2\nnothing\n", &[0; 4]), true), Verdict::No);
        let refused = |lines: &str| decode(&file(lines, &[0; 4]), &Limits::default()).unwrap_err();
        assert!(matches!(refused("Image type: RLB image\nImage size (x*y): 2*2\n"), Error::Unsupported { .. }));
        assert!(matches!(refused("Image type: L*33 image\nImage size (x*y): 2*2\n"), Error::Unsupported { .. }));
        assert!(matches!(refused("Image type: RGB image\nImage size (x*y): 2*2\n"), Error::Truncated { .. }));
        assert!(matches!(refused("Image size (x*y): 2.0*2\n"), Error::Malformed { .. }));
    }
}
