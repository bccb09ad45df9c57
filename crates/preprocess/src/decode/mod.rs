//! Image bytes to [`RgbImage`], as the reference loads an image: `Image.open` (format from the
//! content, not the file name), `ImageOps.exif_transpose`, `.convert("RGB")`.
//!
//! JPEG goes through libjpeg-turbo (Pillow's own decoder, hence identical pixels), PNG and GIF
//! through their crates with Pillow's mode semantics, WebP, BMP and TIFF through `image`.

mod gif;
mod image_crate;
mod jpeg;
mod png;

use crate::{Error, Limits, Orientation, Result, RgbImage};
use std::io::Read;
use std::path::Path;

/// A container format, recognised from the first bytes like Pillow's `Image.open` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jpeg,
    Png,
    Gif,
    Webp,
    Bmp,
    Tiff,
}

impl Format {
    /// The format of `bytes`, from its signature.
    pub fn sniff(bytes: &[u8]) -> Result<Format> {
        if bytes.is_empty() {
            return Err(Error::Empty);
        }
        let starts = |sig: &[u8]| bytes.starts_with(sig);
        Ok(if starts(b"\xFF\xD8\xFF") {
            Format::Jpeg
        } else if starts(b"\x89PNG\r\n\x1a\n") {
            Format::Png
        } else if starts(b"GIF87a") || starts(b"GIF89a") {
            Format::Gif
        } else if starts(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
            Format::Webp
        } else if starts(b"BM") {
            Format::Bmp
        } else if starts(b"II*\0") || starts(b"MM\0*") {
            Format::Tiff
        } else {
            return Err(Error::UnknownFormat { magic: bytes.iter().take(8).copied().collect() });
        })
    }
}

/// How to decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Checked from the header before any pixel buffer is allocated.
    pub limits: Limits,
    /// Apply the EXIF orientation (`ImageOps.exif_transpose`). mlx-vlm's `load_image` does for
    /// paths, URLs, data URIs and `BytesIO`; a `PIL.Image` handed to the processor directly is
    /// not transposed. Default `true`.
    pub apply_exif_orientation: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions { limits: Limits::default(), apply_exif_orientation: true }
    }
}

/// A decoded image before orientation.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub image: RgbImage,
    pub orientation: Orientation,
}

/// Decodes `bytes` to RGB8 (HWC), orienting it when `options` say so.
pub fn decode(bytes: &[u8], options: &DecodeOptions) -> Result<RgbImage> {
    let decoded = match Format::sniff(bytes)? {
        Format::Jpeg => jpeg::decode(bytes, &options.limits)?,
        Format::Png => png::decode(bytes, &options.limits)?,
        Format::Gif => gif::decode(bytes, &options.limits)?,
        Format::Webp => image_crate::decode(bytes, image_crate::Kind::Webp, &options.limits)?,
        Format::Bmp => image_crate::decode(bytes, image_crate::Kind::Bmp, &options.limits)?,
        Format::Tiff => image_crate::decode(bytes, image_crate::Kind::Tiff, &options.limits)?,
    };
    Ok(if options.apply_exif_orientation { decoded.orientation.apply(decoded.image) } else { decoded.image })
}

/// Reads and decodes a file with the EXIF orientation applied, as mlx-vlm's `load_image(path)`
/// does (`Image.open(path)` -> `ImageOps.exif_transpose` -> `.convert("RGB")`). Errors name the
/// file: [`Error::Io`] when it cannot be read (missing, a directory), else [`Error::File`]
/// wrapping the decoding error.
///
/// Memory and time stay bounded for any path: the first bytes are checked for an image
/// signature before the rest is read (so `/dev/zero` is refused at once, as `Image.open`
/// refuses it), and no more than [`Limits::max_file_bytes`] are read
/// ([`Error::TooManyBytes`]; a regular file that long is refused from its size, unread).
pub fn open(path: impl AsRef<Path>, limits: &Limits) -> Result<RgbImage> {
    let path = path.as_ref();
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let in_file = |source| Error::File { path: path.to_path_buf(), source: Box::new(source) };
    let max_bytes = limits.max_file_bytes();
    let too_long = || in_file(Error::TooManyBytes { max_bytes, max_pixels: limits.max_pixels });
    let mut file = std::fs::File::open(path).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if metadata.is_file() && metadata.len() > max_bytes {
        return Err(too_long());
    }
    let mut bytes = Vec::new();
    (&mut file).take(SNIFF_BYTES).read_to_end(&mut bytes).map_err(io)?;
    Format::sniff(&bytes).map_err(in_file)?;
    (&mut file).take(max_bytes.saturating_add(1).saturating_sub(SNIFF_BYTES)).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_long());
    }
    decode(&bytes, &DecodeOptions { limits: *limits, apply_exif_orientation: true }).map_err(in_file)
}

/// Bytes read before [`Format::sniff`] decides whether the rest is worth reading (it looks at
/// the first 12).
const SNIFF_BYTES: u64 = 16;
