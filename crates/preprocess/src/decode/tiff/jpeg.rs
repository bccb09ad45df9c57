//! JPEG-compressed strips and tiles (`Compression` 7) through libjpeg-turbo, as libtiff's JPEG
//! codec drives libjpeg for Pillow: the JPEGTables stream read before each segment, the
//! accurate integer IDCT and fancy upsampling (libjpeg's defaults), and libtiff's colour
//! handling: YCbCr (photometric 6, `JPEGCOLORMODE_RGB`) converted to RGB by libjpeg, every
//! other photometric read as the raw components (`JCS_UNKNOWN`: no YCbCr conversion, no CMYK
//! inversion).

use crate::{Error, Limits, Result};
use turbojpeg::{Colorspace, Decompressor, Image, PixelFormat, Subsamp, YuvImage};

const FORMAT: &str = "TIFF";

/// The JPEG stream libjpeg sees for one segment: the tables stream without its EOI, then the
/// segment without its SOI (libtiff reads the tables as an abbreviated stream first; the
/// concatenation loads the same tables).
fn stream(tables: Option<&[u8]>, data: &[u8]) -> Vec<u8> {
    match tables {
        Some(t) if t.len() >= 4 && t.starts_with(&[0xFF, 0xD8]) && data.starts_with(&[0xFF, 0xD8]) => {
            let head = if t.ends_with(&[0xFF, 0xD9]) { &t[..t.len() - 2] } else { t };
            let mut s = Vec::with_capacity(head.len() + data.len());
            s.extend_from_slice(head);
            s.extend_from_slice(&data[2..]);
            s
        }
        _ => data.to_vec(),
    }
}

/// Decodes one segment of `width` x `rows` pixels of `channels` 8-bit samples into `out`
/// (`width * channels` bytes per row). A stream smaller than the segment fills what it covers
/// (libtiff warns; Pillow's buffer stays zero elsewhere); a larger one is an error, as in
/// libtiff, except a last strip coded taller than the image.
#[allow(clippy::too_many_arguments, reason = "the segment's stream, colour and geometry inputs")]
pub fn decode_segment(
    tables: Option<&[u8]>,
    data: &[u8],
    photometric: u64,
    channels: usize,
    width: usize,
    rows: usize,
    out: &mut [u8],
    limits: &Limits,
) -> Result<()> {
    let jpeg = stream(tables, data);
    let mut d = Decompressor::new().map_err(|e| Error::malformed(FORMAT, e))?;
    let header = d.read_header(&jpeg).map_err(|e| Error::malformed(FORMAT, format!("JPEG segment: {e}")))?;
    // libtiff accepts a last strip coded taller than the rows left (the rest is dropped), so
    // the height is bounded by the limits rather than by the segment.
    if header.width > width {
        return Err(Error::malformed(FORMAT, "JPEG strip/tile size exceeds expected dimensions"));
    }
    limits.check(header.width as u64, header.height as u64)?;
    let (jw, jh) = (header.width, header.height);
    let (format, raw_yuv) = match (photometric, channels, header.colorspace) {
        (6, 3, Colorspace::YCbCr) => (PixelFormat::RGB, false),
        (2, 3, Colorspace::RGB) => (PixelFormat::RGB, false),
        (2, 3, Colorspace::YCbCr) if header.subsamp == Subsamp::None => (PixelFormat::RGB, true),
        // CIELab: libtiff writes it as JCS_UNKNOWN (no markers, libjpeg guesses YCbCr) and
        // reads the components back unconverted.
        (8, 3, Colorspace::YCbCr) if header.subsamp == Subsamp::None => (PixelFormat::RGB, true),
        (0 | 1, 1, Colorspace::Gray) => (PixelFormat::GRAY, false),
        (5, 4, Colorspace::CMYK) => (PixelFormat::CMYK, false),
        (p, c, cs) => {
            return Err(Error::unsupported(
                FORMAT,
                format!("JPEG segment coded as {cs:?} ({:?}) for photometric {p} with {c} samples", header.subsamp),
            ));
        }
    };
    let pixels = if raw_yuv {
        // The components as stored (libtiff's JCS_UNKNOWN): planes of full resolution.
        let mut planes = vec![0u8; jw * jh * 3];
        let image = YuvImage { pixels: planes.as_mut_slice(), width: jw, align: 1, height: jh, subsamp: Subsamp::None };
        run(d.decompress_to_yuv(&jpeg, image))?;
        let n = jw * jh;
        let mut px = vec![0u8; n * 3];
        for (i, p) in px.chunks_exact_mut(3).enumerate() {
            p[0] = planes[i];
            p[1] = planes[n + i];
            p[2] = planes[2 * n + i];
        }
        px
    } else {
        let mut px = vec![0u8; jw * jh * channels];
        let image = Image { pixels: px.as_mut_slice(), width: jw, pitch: jw * channels, height: jh, format };
        run(d.decompress(&jpeg, image))?;
        px
    };
    let out_row = width * channels;
    let copy = jw * channels;
    for (y, src) in pixels.chunks_exact(copy.max(1)).take(rows).enumerate() {
        if let Some(dst) = out.get_mut(y * out_row..y * out_row + copy) {
            dst.copy_from_slice(src);
        }
    }
    Ok(())
}

/// libjpeg warnings leave a complete image (libtiff only reports them); errors fail the segment.
fn run(result: turbojpeg::Result<()>) -> Result<()> {
    match result {
        Ok(()) => Ok(()),
        Err(e) => {
            let message = e.to_string();
            if super::super::jpeg::is_benign_warning(&message) || message.contains("Premature end of JPEG file") {
                Ok(())
            } else {
                Err(Error::malformed(FORMAT, format!("JPEG segment: {message}")))
            }
        }
    }
}
