//! GIMP brushes (GBR) as Pillow's `GbrImagePlugin` loads them, then `convert("RGB")`: after
//! the header ([`gbr_header`](super::open_checks::gbr_header)) come `width * height` gray
//! bytes (depth 1, mode `L`) or RGBA quadruples (depth 4; alpha dropped), rows top-down; too
//! few bytes is "not enough image data".

use super::Decoded;
use super::open_checks::{Header, gbr_header};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "GBR";

/// Decodes a GIMP brush; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let Ok(Some(header)) = gbr_header(Header { bytes, complete: true }) else {
        return Err(Error::malformed(FORMAT, "not a GIMP brush"));
    };
    limits.check(header.width.into(), header.height.into())?;
    let (width, height, depth) = (header.width as usize, header.height as usize, header.depth as usize);
    let data = bytes
        .get(header.data_offset..)
        .and_then(|rest| rest.get(..width * height * depth))
        .ok_or_else(|| Error::Truncated { format: FORMAT, detail: "not enough image data".into() })?;
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (pixel, px) in data.chunks_exact(depth).zip(rgb.chunks_exact_mut(3)) {
        match *pixel {
            [gray] => px.fill(gray),
            [r, g, b, _] => px.copy_from_slice(&[r, g, b]),
            _ => {}
        }
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}
