//! SPIDER 2D images as Pillow's `SpiderImagePlugin` loads them (mode `F`), then
//! `convert("RGB")`, which Pillow does through `L`: each float32 sample (byte order from the
//! header) is 0 at or below 0, 255 at or above 255, else truncated toward zero (`f2l`; NaN is
//! 0). The samples start after the header ([`spider_header`], also the format's `_open`
//! check), rows top-down; data that ends early is "image file is truncated".

use super::Decoded;
use super::open_checks::{Header, NeedMore, Reader, Verdict, verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "SPIDER";

/// `SpiderImagePlugin._open`: 27 float32 header values, big- then little-endian, passing
/// `isSpiderHeader` (integral values at the key positions, a known `iform`, `labbyt = labrec *
/// lenbyt` non-zero), `iform` 1 (a 2D image), a stack layout Pillow opens and a positive size.
pub(crate) fn is_spider(header: Header<'_>) -> Verdict {
    verdict(|| Ok(spider_header(header)?.is_some()))
}

/// What a SPIDER header gives: the size, the byte order of its float32 samples and where they
/// start (the header length, doubled for the first image of a stack; Pillow would seek to a
/// negative one and fail).
pub(crate) struct SpiderHeader {
    pub width: i64,
    pub height: i64,
    pub big_endian: bool,
    pub data_offset: f64,
}

/// `SpiderImagePlugin._open`: the header when the file is a SPIDER 2D image.
pub(crate) fn spider_header(header: Header<'_>) -> Result<Option<SpiderHeader>, NeedMore> {
    let mut r = Reader::new(header);
    let bytes = r.read(108)?;
    if bytes.len() < 108 {
        return Ok(None);
    }
    let values = |big: bool| -> Vec<f64> {
        // Fortran indexing: h[0] is a placeholder.
        std::iter::once(99.0)
            .chain(bytes.chunks_exact(4).map(|c| {
                let b = [c[0], c[1], c[2], c[3]];
                f64::from(if big { f32::from_be_bytes(b) } else { f32::from_le_bytes(b) })
            }))
            .collect()
    };
    let is_int = |f: f64| f.is_finite() && f.trunc() == f;
    let header_len = |h: &[f64]| {
        if [1, 2, 5, 12, 13, 22, 23].iter().any(|&i| !is_int(h[i])) {
            return 0.0;
        }
        let valid = [1.0, 3.0, -11.0, -12.0, -21.0, -22.0].contains(&h[5]) && h[22] == h[13] * h[23];
        if valid { h[22] } else { 0.0 }
    };
    let big = values(true);
    let big_endian = header_len(&big) != 0.0;
    let h = if big_endian { big } else { values(false) };
    let length = header_len(&h);
    if length == 0.0 || h[5] != 1.0 {
        return Ok(None);
    }
    // `int(h[24])`, `int(h[27])` (and `int(h[26])` for a stack) raise on NaN and infinity.
    if !h[24].is_finite() || !h[27].is_finite() {
        return Ok(None);
    }
    let (stack, image) = (h[24].trunc(), h[27].trunc());
    let layout = image == 0.0 && (stack == 0.0 || (stack > 0.0 && h[26].is_finite()));
    let (width, height) = (h[12].trunc(), h[2].trunc());
    let data_offset = if stack > 0.0 { 2.0 * length } else { length };
    Ok((layout && width > 0.0 && height > 0.0).then_some(SpiderHeader {
        width: width.min(i64::MAX as f64) as i64,
        height: height.min(i64::MAX as f64) as i64,
        big_endian,
        data_offset,
    }))
}

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
