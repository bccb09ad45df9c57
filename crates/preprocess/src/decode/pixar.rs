//! PIXAR raster files as Pillow's `PixarImagePlugin` loads them: a 512-byte header with the
//! width and height (little-endian words at 418 and 416) and the pixel layout at 424 and 426,
//! of which Pillow reads only (14, 2), RGB; the pixels are RGB triples from byte 1024, rows
//! top-down; data that ends early is "image file is truncated".

use super::Decoded;
use super::bytes::le16;
use super::open_checks::{Header, Verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "PIXAR";

/// The width and height when the header gives Pillow a mode (RGB) and a non-zero size.
fn size(bytes: &[u8]) -> Option<(u16, u16)> {
    let (width, height) = (le16(bytes, 418)?, le16(bytes, 416)?);
    let rgb = (le16(bytes, 424)?, le16(bytes, 426)?) == (14, 2);
    (rgb && width > 0 && height > 0).then_some((width, height))
}

/// `PixarImageFile._open` as a header check.
pub(crate) fn is_pixar(header: Header<'_>) -> Verdict {
    match size(header.bytes) {
        Some(_) => Verdict::Yes,
        None if header.bytes.len() < 428 && !header.complete => Verdict::NeedMore,
        None => Verdict::No,
    }
}

/// Decodes a PIXAR file; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let (width, height) = size(bytes).ok_or_else(|| Error::malformed(FORMAT, "not an RGB PIXAR header"))?;
    limits.check(width.into(), height.into())?;
    let n = usize::from(width) * usize::from(height) * 3;
    let data = bytes
        .get(1024..)
        .and_then(|rest| rest.get(..n))
        .ok_or_else(|| Error::Truncated { format: FORMAT, detail: "image file is truncated".into() })?;
    let mut rgb = crate::buffer_pool::take(n);
    rgb.copy_from_slice(data);
    Ok(Decoded { image: RgbImage::from_parts(width.into(), height.into(), rgb), orientation: Orientation::Normal })
}
