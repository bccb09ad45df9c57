//! GIMP brushes (GBR) as Pillow's `GbrImagePlugin` loads them, then `convert("RGB")`: after
//! the header ([`gbr_header`], also the format's `_open` check) come `width * height` gray
//! bytes (depth 1, mode `L`) or RGBA quadruples (depth 4; alpha dropped), rows top-down; too
//! few bytes is "not enough image data".

use super::Decoded;
use super::open_checks::{Header, NeedMore, Reader, Verdict, verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "GBR";

/// `GbrImagePlugin._open` as a header check.
pub(crate) fn is_gbr(header: Header<'_>) -> Verdict {
    verdict(|| Ok(gbr_header(header)?.is_some()))
}

/// What a GIMP brush header gives: the size, the bytes per pixel (1: `L`, 4: `RGBA`) and where
/// the pixels start (after the comment; at the end of the file for a version 2 header of 27
/// bytes, whose comment length of -1 makes Pillow's `read` read everything).
pub(crate) struct GbrHeader {
    pub width: u32,
    pub height: u32,
    pub depth: u32,
    pub data_offset: usize,
}

/// `GbrImagePlugin._open`: header size of at least 20, version 1 or 2, a non-zero size, colour
/// depth 1 or 4, and for version 2 the `GIMP` magic, a spacing word (big-endian words) and a
/// header of at least 27 bytes (a shorter one makes the comment's `read` raise ValueError).
pub(crate) fn gbr_header(header: Header<'_>) -> Result<Option<GbrHeader>, NeedMore> {
    let mut r = Reader::new(header);
    let mut word = || -> Result<Option<u32>, NeedMore> { Ok(r.read(4)?.try_into().ok().map(u32::from_be_bytes)) };
    let (Some(header_size), Some(version)) = (word()?, word()?) else { return Ok(None) };
    if header_size < 20 || !matches!(version, 1 | 2) {
        return Ok(None);
    }
    let (Some(width), Some(height)) = (word()?, word()?) else { return Ok(None) };
    if width == 0 || height == 0 {
        return Ok(None);
    }
    let Some(depth @ (1 | 4)) = word()? else { return Ok(None) };
    if version == 2 {
        let magic = word()?;
        if magic != Some(u32::from_be_bytes(*b"GIMP")) || word()?.is_none() {
            return Ok(None);
        }
    }
    let data_offset = match (version, header_size) {
        (2, ..27) => return Ok(None),
        (2, 27) => header.bytes.len(),
        _ => header_size as usize,
    };
    Ok(Some(GbrHeader { width, height, depth, data_offset }))
}

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
