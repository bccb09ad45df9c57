//! Image bytes to [`RgbImage`], as the reference loads an image: `Image.open` (format from the
//! content, not the file name), `ImageOps.exif_transpose`, `.convert("RGB")`.
//!
//! Which formats exist, how each is recognised and which decoder reads it is one table,
//! `format.rs` (rendered as [`Format`]'s variants); `sniff.rs` identifies a file by its rows,
//! [`decode`] dispatches to the row's decoder, one file (or folder) per format.
//! `open_checks.rs` has what every `_open` header check is written with, and the check of the
//! format only identified (IPTC); a format that is read has its check in its decoder
//! file, beside the header parse they share.
//!
//! JPEG goes through libjpeg-turbo (Pillow's own decoder, hence identical pixels), PNG and GIF
//! through their crates with Pillow's mode semantics, WebP through `image` (an animation's
//! container demuxed and its first frame placed on the canvas as libwebp's `WebPAnimDecoder`
//! does, `webp/`), AVIF's AV1 frames
//! through `re_rav1d` (dav1d's Rust port; `avif/` reads the container and converts to RGB as
//! libavif and libyuv do for Pillow), JPEG 2000 through OpenJPEG (`jpeg2000/` drives it and
//! unpacks its tiles as Pillow's `Jpeg2KDecode.c` does); TIFF (`tiff/`) and every other format read have decoders
//! of their own that follow Pillow's plugins and C decoders step by step.

mod avif;
mod bcn;
mod blp;
mod blp_dxt;
mod bmp;
mod bytes;
mod cielab;
mod dcx;
mod dds;
mod fits;
mod fli;
mod format;
mod ftex;
mod gbr;
mod gif;
mod icns;
mod ico;
mod im;
mod imt;
mod jpeg;
mod jpeg2000;
mod mcidas;
mod msp;
mod open_checks;
mod pcd;
mod pcx;
mod pixar;
mod png;
mod ppm;
mod psd;
mod qoi;
mod sgi;
mod sniff;
mod spider;
mod sun;
mod tga;
mod tiff;
mod webp;
mod xbm;
mod xpm;
mod xvthumb;

pub use format::Format;

use crate::{Error, Limits, Orientation, Result, RgbImage};
use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

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

/// Decodes `bytes` to RGB8 (HWC), orienting it when `options` say so. The format comes from
/// the content ([`Format::sniff`]); a format Pillow identifies but this crate does not read is
/// refused with [`Error::UnsupportedFormat`] naming it.
///
/// No input makes this panic: a panic inside a decoder (ours or a third-party crate's) is
/// caught here and returned as [`Error::DecoderPanic`] naming the format.
pub fn decode(bytes: &[u8], options: &DecodeOptions) -> Result<RgbImage> {
    let format = Format::sniff(bytes)?;
    let decoded = catch_unwind(AssertUnwindSafe(|| decode_format(format, bytes, &options.limits)))
        .map_err(|panic| Error::DecoderPanic { format: format.name(), message: panic_message(panic.as_ref()) })??;
    Ok(if options.apply_exif_orientation { decoded.orientation.apply(decoded.image) } else { decoded.image })
}

/// The decoder of `format`'s row; a format without one is refused by name.
fn decode_format(format: Format, bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let decoder = format.row().decoder.ok_or(Error::UnsupportedFormat { format: format.name() })?;
    decoder(bytes, limits)
}

/// The text of a caught panic's payload (`panic!` with a literal or a formatted message).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// Reads and decodes a file with the EXIF orientation applied, as mlx-vlm's `load_image(path)`
/// does (`Image.open(path)` -> `ImageOps.exif_transpose` -> `.convert("RGB")`). Errors name the
/// file: [`Error::Io`] when it cannot be read (missing, a directory), else [`Error::File`]
/// wrapping the decoding error.
///
/// Memory and time stay bounded for any path: the first bytes are checked for an image
/// signature before the rest is read (so `/dev/zero` is refused after at most
/// `HEADER_SNIFF_BYTES`, as `Image.open` refuses it), more of the file is read only while a
/// header check needs it (those of IM, IMT, IPTC, PCD and SPIDER run on files without a
/// signature), and no more than [`Limits::max_file_bytes`] are read ([`Error::TooManyBytes`];
/// a regular file that long is refused from its size, unread).
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
    let mut want = sniff::SNIFF_BYTES as u64;
    loop {
        (&mut file).take(want - bytes.len() as u64).read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() as u64 > max_bytes {
            return Err(too_long());
        }
        let header = open_checks::Header { bytes: &bytes, complete: (bytes.len() as u64) < want };
        if sniff::sniff_header(header).map_err(in_file)?.is_some() {
            break;
        }
        want = if want < sniff::HEADER_SNIFF_BYTES as u64 {
            sniff::HEADER_SNIFF_BYTES as u64
        } else {
            max_bytes.saturating_add(1)
        };
    }
    let read = bytes.len() as u64;
    (&mut file).take(max_bytes.saturating_add(1).saturating_sub(read)).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_long());
    }
    decode(&bytes, &DecodeOptions { limits: *limits, apply_exif_orientation: true }).map_err(in_file)
}
