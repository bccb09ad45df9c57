//! IM Tools (IMT) images as Pillow's `ImtImagePlugin` loads them, then `convert("RGB")`: the
//! header ([`imt_header`](super::open_checks::imt_header)) gives the size, and after its
//! `\x0c` come `width * height` gray bytes, rows top-down. Without the `\x0c` there is nothing
//! to load ("cannot load this image"); data that ends early is "image file is truncated".

use super::Decoded;
use super::open_checks::{Header, imt_header};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "IMT";

/// Decodes an IMT file; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let Ok(Some(header)) = imt_header(Header { bytes, complete: true }) else {
        return Err(Error::malformed(FORMAT, "not an IMT header"));
    };
    limits.check(header.width as u64, header.height as u64)?;
    let offset = header.data_offset.ok_or_else(|| Error::malformed(FORMAT, "cannot load this image"))?;
    let (width, height) = (header.width as usize, header.height as usize);
    let gray = bytes
        .get(offset..)
        .and_then(|rest| rest.get(..width * height))
        .ok_or_else(|| Error::Truncated { format: FORMAT, detail: "image file is truncated".into() })?;
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (&v, px) in gray.iter().zip(rgb.chunks_exact_mut(3)) {
        px.fill(v);
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}
