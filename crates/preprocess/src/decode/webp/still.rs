//! A still WebP (no animation flag) through the `image` crate, converted to RGB with Pillow's
//! semantics:
//! alpha dropped (never composited), gray replicated, 16-bit gray saturated at 255 (Pillow's
//! `I;16` -> RGB), other 16-bit samples reduced to their high byte (Pillow's `;16` unpackers).

use crate::decode::Decoded;
use crate::{Error, Limits, Orientation, Result, RgbImage};
use image::{DynamicImage, ImageDecoder, ImageError};
use std::io::Cursor;

const FORMAT: &str = "WEBP";

/// Decodes a still image; the header is checked against `limits` before the pixel buffer
/// exists. The orientation is the EXIF chunk's, else the XMP chunk's `tiff:Orientation`, as
/// Pillow's `getexif` reads them.
pub(super) fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let classify = |e: ImageError| classify(FORMAT, e);
    let mut decoder = image::codecs::webp::WebPDecoder::new(Cursor::new(bytes)).map_err(classify)?;
    let (width, height) = decoder.dimensions();
    limits.check(width.into(), height.into())?;
    let mut image_limits = image::Limits::no_limits();
    image_limits.max_image_width = Some(width);
    image_limits.max_image_height = Some(height);
    decoder.set_limits(image_limits).map_err(classify)?;
    let exif = decoder.exif_metadata().ok().flatten();
    let xmp = decoder.xmp_metadata().ok().flatten();
    let orientation = Orientation::from_exif_or_xmp(exif.as_deref(), xmp.as_deref());
    let image = DynamicImage::from_decoder(decoder).map_err(classify)?;
    Ok(Decoded { image: to_rgb(image, FORMAT)?, orientation })
}

fn to_rgb(image: DynamicImage, format: &'static str) -> Result<RgbImage> {
    let (width, height) = (image.width(), image.height());
    let rgb: Vec<u8> = match image {
        DynamicImage::ImageRgb8(img) => img.into_raw(),
        DynamicImage::ImageRgba8(img) => img.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect(),
        DynamicImage::ImageLuma8(img) => img.iter().flat_map(|&g| [g; 3]).collect(),
        DynamicImage::ImageLumaA8(img) => img.chunks_exact(2).flat_map(|p| [p[0]; 3]).collect(),
        DynamicImage::ImageLuma16(img) => img.iter().flat_map(|&g| [g.min(255) as u8; 3]).collect(),
        DynamicImage::ImageLumaA16(img) => img.chunks_exact(2).flat_map(|p| [(p[0] >> 8) as u8; 3]).collect(),
        DynamicImage::ImageRgb16(img) => img.iter().map(|&v| (v >> 8) as u8).collect(),
        DynamicImage::ImageRgba16(img) => {
            img.chunks_exact(4).flat_map(|p| [(p[0] >> 8) as u8, (p[1] >> 8) as u8, (p[2] >> 8) as u8]).collect()
        }
        other => return Err(Error::unsupported(format, format!("pixel type {:?}", other.color()))),
    };
    RgbImage::new(width, height, rgb)
}

fn classify(format: &'static str, error: ImageError) -> Error {
    match error {
        ImageError::Unsupported(e) => Error::unsupported(format, e),
        ImageError::Limits(e) => Error::malformed(format, e),
        ImageError::IoError(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Error::Truncated { format, detail: e.to_string() }
        }
        other => Error::malformed(format, other),
    }
}
