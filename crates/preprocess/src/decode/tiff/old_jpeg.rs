//! Old-style JPEG (`Compression` 6) as libtiff's OJPEG codec and RGBA interface give it to
//! Pillow (which reads it as YCbCr through `TIFFRGBAImage`): the JPEG interchange stream
//! (JPEGInterchangeFormat, tag 513) decoded to its raw, subsampled Y, Cb and Cr planes, each
//! chroma sample shared by its whole block (no interpolation), then libtiff's table-driven
//! [`YCbCrToRgb`]. Only the common layout is read: one stream covering the whole image.

use super::ycbcr::YCbCrToRgb;
use crate::{Error, Limits, Result};
use turbojpeg::{Colorspace, Decompressor, Subsamp, YuvImage};

const FORMAT: &str = "TIFF";

/// RGB8 of an old-style JPEG TIFF whose interchange stream starts at `offset`.
pub fn decode(
    bytes: &[u8],
    offset: u64,
    width: usize,
    height: usize,
    tables: &YCbCrToRgb,
    limits: &Limits,
) -> Result<Vec<u8>> {
    let stream = usize::try_from(offset)
        .ok()
        .and_then(|o| bytes.get(o..))
        .ok_or_else(|| Error::Truncated { format: FORMAT, detail: "JPEG interchange stream past the end".into() })?;
    let mut d = Decompressor::new().map_err(|e| Error::malformed(FORMAT, e))?;
    let header = d.read_header(stream).map_err(|e| Error::malformed(FORMAT, format!("old-style JPEG: {e}")))?;
    if header.width != width || header.height != height {
        return Err(Error::unsupported(
            FORMAT,
            format!("old-style JPEG stream of {}x{} for a {width}x{height} image", header.width, header.height),
        ));
    }
    let (bw, bh) = match (header.colorspace, header.subsamp) {
        (Colorspace::YCbCr, Subsamp::None) => (1, 1),
        (Colorspace::YCbCr, Subsamp::Sub2x1) => (2, 1),
        (Colorspace::YCbCr, Subsamp::Sub2x2) => (2, 2),
        (cs, s) => return Err(Error::unsupported(FORMAT, format!("old-style JPEG coded as {cs:?} {s:?}"))),
    };
    limits.check(width as u64, height as u64)?;
    let len = turbojpeg::yuv_pixels_len(width, 1, height, header.subsamp).map_err(|e| Error::malformed(FORMAT, e))?;
    let mut planes = vec![0u8; len];
    let image = YuvImage { pixels: planes.as_mut_slice(), width, align: 1, height, subsamp: header.subsamp };
    if let Err(e) = d.decompress_to_yuv(stream, image) {
        let message = e.to_string();
        if !super::super::jpeg::is_benign_warning(&message) {
            return Err(Error::malformed(FORMAT, format!("old-style JPEG: {message}")));
        }
    }
    let (cw, ch) = (width.div_ceil(bw), height.div_ceil(bh));
    let y_plane = planes.get(..width * height).unwrap_or_default();
    let cb_plane = planes.get(width * height..width * height + cw * ch).unwrap_or_default();
    let cr_plane = planes.get(width * height + cw * ch..width * height + 2 * cw * ch).unwrap_or_default();
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (y, row) in rgb.chunks_exact_mut(width * 3).enumerate() {
        for (x, px) in row.chunks_exact_mut(3).enumerate() {
            let c = (y / bh) * cw + x / bw;
            let at = |p: &[u8], i: usize| p.get(i).copied().unwrap_or(0);
            px.copy_from_slice(&tables.rgb(at(y_plane, y * width + x), at(cb_plane, c), at(cr_plane, c)));
        }
    }
    Ok(rgb)
}
