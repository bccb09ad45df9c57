//! XV thumbnails as Pillow's `XVThumbImagePlugin` loads them, then `convert("RGB")`: after the
//! `P7 332` line and any `#` comment lines, a line `width height ...`, then `width * height`
//! bytes, each an index into XV's fixed 3-3-2 palette (red and green `v * 255 / 7`, blue
//! `v * 255 / 3`, rounded down); data that ends early is "image file is truncated".

use super::Decoded;
use super::open_checks::{Header, Reader, python_int};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "XVThumb";

/// Decodes an XV thumbnail; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let mut r = Reader::new(Header { bytes, complete: true });
    let malformed = |detail: &str| Error::malformed(FORMAT, detail);
    if r.read(6).ok() != Some(b"P7 332".as_slice()) {
        return Err(malformed("not an XV thumbnail file"));
    }
    let _ = r.readline();
    let line = loop {
        let line = r.readline().unwrap_or(&[]);
        match line.first() {
            None => return Err(malformed("Unexpected EOF reading XV thumbnail file")),
            Some(b'#') => continue,
            Some(_) => break line,
        }
    };
    let mut words = line.split(|b| b" \t\n\r\x0b\x0c".contains(b)).filter(|w| !w.is_empty());
    let (Some(width), Some(height)) = (words.next().and_then(python_int), words.next().and_then(python_int)) else {
        return Err(malformed("no width and height"));
    };
    if width <= 0 || height <= 0 {
        return Err(Error::ZeroSize { width: width.max(0) as u64, height: height.max(0) as u64 });
    }
    limits.check(width as u64, height as u64)?;
    let pixels = (width * height) as usize;
    let data = bytes
        .get(r.pos..r.pos + pixels)
        .ok_or_else(|| Error::Truncated { format: FORMAT, detail: "image file is truncated".into() })?;
    let mut rgb = crate::buffer_pool::take(pixels * 3);
    for (&v, px) in data.iter().zip(rgb.chunks_exact_mut(3)) {
        let (r, g, b) = (u32::from(v >> 5), u32::from((v >> 2) & 7), u32::from(v & 3));
        px.copy_from_slice(&[(r * 255 / 7) as u8, (g * 255 / 7) as u8, (b * 255 / 3) as u8]);
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}
