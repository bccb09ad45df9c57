//! SPIDER 2D images as Pillow's `SpiderImagePlugin` loads them (mode `F`), then
//! `convert("RGB")`, which Pillow does through `L`: each float32 sample (byte order from the
//! header) is 0 at or below 0, 255 at or above 255, else truncated toward zero (`f2l`; NaN is
//! 0). The samples start after the header ([`spider_header`](super::open_checks::spider_header)),
//! rows top-down; data that ends early is "image file is truncated".

use super::Decoded;
use super::open_checks::{Header, spider_header};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "SPIDER";

/// Decodes a SPIDER image; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let Ok(Some(header)) = spider_header(Header { bytes, complete: true }) else {
        return Err(Error::malformed(FORMAT, "not a valid Spider file"));
    };
    limits.check(header.width as u64, header.height as u64)?;
    if header.data_offset < 0.0 || header.data_offset >= bytes.len() as f64 {
        return Err(Error::Truncated { format: FORMAT, detail: "image file is truncated".into() });
    }
    let (width, height) = (header.width as usize, header.height as usize);
    let offset = header.data_offset as usize;
    let samples = bytes
        .get(offset..)
        .and_then(|rest| rest.get(..width * height * 4))
        .ok_or_else(|| Error::Truncated { format: FORMAT, detail: "image file is truncated".into() })?;
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (sample, px) in samples.chunks_exact(4).zip(rgb.chunks_exact_mut(3)) {
        let b = [sample[0], sample[1], sample[2], sample[3]];
        let v = if header.big_endian { f32::from_be_bytes(b) } else { f32::from_le_bytes(b) };
        let gray = if v <= 0.0 {
            0
        } else if v >= 255.0 {
            255
        } else {
            v as u8
        };
        px.fill(gray);
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}
