//! AVIF as Pillow 13 reads it through its `_avif` module (libavif 1.4.2, dav1d, libyuv):
//! the container (`container.rs`), the AV1 frame (`av1.rs`, through `re_rav1d`) and libyuv's
//! YUV to RGB (`yuv_to_rgb.rs`); the orientation is the `irot`/`imir` properties' as Pillow's
//! `AvifImagePlugin` writes them into the EXIF, else the XMP's.
//!
//! Refused, each by name ([`Error::Unsupported`]): grid images, colour images of more than
//! 8 bits with alpha, monochrome images with alpha, premultiplied alpha over more than 8 bits,
//! matrix coefficients libyuv has no constants for (libavif converts those itself), and frames
//! whose size differs from their `ispe` (libavif scales those).

mod av1;
mod container;
mod yuv_to_rgb;

use super::Decoded;
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "AVIF";

/// libavif's default `imageSizeLimit` (pixels a frame may have), which Pillow keeps.
const IMAGE_SIZE_LIMIT: u64 = 16384 * 16384;
/// libavif's default `imageDimensionLimit` (the longest side), which Pillow keeps.
const IMAGE_DIMENSION_LIMIT: u32 = 32768;

/// Decodes the image libavif decodes first (the primary item, or an image sequence's first
/// frame) to RGB8, checking the announced and the decoded size against `limits` before any
/// pixel buffer of that size exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let container = container::parse(bytes)?;
    if let Some((width, height)) = container.size {
        limits.check(width.into(), height.into())?;
    }
    let frame = av1::decode(&container.payload, limits.max_pixels.min(IMAGE_SIZE_LIMIT))?;
    limits.check(frame.width.into(), frame.height.into())?;
    if frame.width > IMAGE_DIMENSION_LIMIT || frame.height > IMAGE_DIMENSION_LIMIT {
        return Err(Error::malformed(
            FORMAT,
            format!("{}x{} is over libavif's limit of {IMAGE_DIMENSION_LIMIT} a side", frame.width, frame.height),
        ));
    }
    if let Some((width, height)) = container.size
        && (width, height) != (frame.width, frame.height)
    {
        return Err(Error::unsupported(
            FORMAT,
            format!("a {}x{} frame in a {width}x{height} item (libavif scales it)", frame.width, frame.height),
        ));
    }
    let (matrix, primaries, full_range) = match container.nclx {
        Some(nclx) => (nclx.matrix_coefficients, nclx.color_primaries, nclx.full_range),
        None => (frame.matrix_coefficients, frame.color_primaries, frame.full_range),
    };
    if frame.layout == av1::Layout::Monochrome {
        if container.has_alpha {
            return Err(Error::unsupported(FORMAT, "monochrome (4:0:0) images with alpha"));
        }
        let rgb = yuv_to_rgb::gray(&frame, matrix, full_range).ok_or_else(|| {
            Error::unsupported(FORMAT, format!("monochrome images with matrix coefficients {matrix}"))
        })?;
        let image = RgbImage::new(frame.width, frame.height, rgb)?;
        return Ok(Decoded { image, orientation: orientation(&container) });
    }
    if frame.depth != 8 && container.has_alpha {
        // libyuv's high bit depth conversions to RGBA (`I010AlphaToARGBMatrixFilter`, ...).
        return Err(Error::unsupported(FORMAT, format!("{}-bit colour images with alpha", frame.depth)));
    }
    let constants = yuv_to_rgb::libyuv_constants(matrix, primaries, full_range).ok_or_else(|| {
        Error::unsupported(FORMAT, format!("matrix coefficients {matrix} (colour primaries {primaries})"))
    })?;
    let mut rgb = yuv_to_rgb::convert(&frame, &constants)?;
    if container.premultiplied {
        let alpha = premultiplied_alpha(&container, &frame, limits)?;
        yuv_to_rgb::unpremultiply(&mut rgb, &alpha);
    }
    let image = RgbImage::new(frame.width, frame.height, rgb)?;
    let orientation = orientation(&container);
    Ok(Decoded { image, orientation })
}

/// The 8-bit alpha plane of an 8-bit colour image premultiplied by it (limited range made full
/// as libavif does), for libavif's unpremultiplication into Pillow's straight RGBA.
fn premultiplied_alpha(container: &container::Container<'_>, frame: &av1::Frame, limits: &Limits) -> Result<Vec<u8>> {
    let unsupported = |what: &str| Error::unsupported(FORMAT, format!("premultiplied alpha {what}"));
    if frame.depth != 8 {
        return Err(unsupported("over more than 8 bits"));
    }
    let payload = container.alpha_payload.as_deref().ok_or_else(|| unsupported("outside an alpha item"))?;
    let alpha = av1::decode(payload, limits.max_pixels.min(IMAGE_SIZE_LIMIT))?;
    if (alpha.width, alpha.height, alpha.depth) != (frame.width, frame.height, frame.depth) {
        return Err(Error::malformed(FORMAT, "the alpha plane does not match the colour planes"));
    }
    let plane = alpha.planes.first().ok_or_else(|| Error::malformed(FORMAT, "an alpha frame without planes"))?;
    Ok(if alpha.full_range {
        plane.samples.iter().map(|&v| v.min(255) as u8).collect()
    } else {
        plane.samples.iter().map(|&v| yuv_to_rgb::limited_to_full_alpha(v)).collect()
    })
}

/// The orientation `exif_transpose` finds: `_avif`'s EXIF value for `irot`/`imir` replaces the
/// EXIF's own whenever there is EXIF or a transform; with neither (or an EXIF without the tag
/// and no transform) `getexif` falls back to the XMP's `tiff:Orientation`.
fn orientation(container: &container::Container<'_>) -> Orientation {
    let transform = transform_orientation(container.rotation, container.mirror);
    if transform != 1 {
        return Orientation::from_exif_value(transform);
    }
    match container.exif.as_deref() {
        Some(exif) if Orientation::exif_has_orientation(exif) => Orientation::Normal,
        _ => container.xmp.as_deref().map_or(Orientation::Normal, Orientation::from_xmp),
    }
}

/// `_avif.c`'s `irot_imir_to_exif_orientation`: `irot` counts counter-clockwise quarter turns,
/// `imir` axis 0 swaps top and bottom, axis 1 left and right.
fn transform_orientation(rotation: Option<u8>, mirror: Option<u8>) -> u32 {
    let axis = mirror.unwrap_or(0);
    match (rotation, mirror.is_some()) {
        (Some(1), true) => {
            if axis != 0 {
                7
            } else {
                5
            }
        }
        (Some(1), false) => 8,
        (Some(2), true) => {
            if axis != 0 {
                4
            } else {
                2
            }
        }
        (Some(2), false) => 3,
        (Some(3), true) => {
            if axis != 0 {
                5
            } else {
                7
            }
        }
        (Some(3), false) => 6,
        (_, true) => {
            if axis != 0 {
                2
            } else {
                4
            }
        }
        (_, false) => 1,
    }
}
