//! JPEG through libjpeg-turbo (the `turbojpeg` crate, vendored libjpeg-turbo 3): the library
//! Pillow's JPEG plugin drives, with the same decoder settings (accurate integer IDCT, fancy
//! upsampling, no draft/DCT scaling), so the pixels are Pillow's byte for byte.
//!
//! Mirrors `JpegImagePlugin` + `JpegDecode.c`: 1 component -> mode `L`, 3 -> `RGB` (libjpeg
//! guesses YCbCr/RGB from the JFIF/Adobe markers), 4 -> `CMYK` read with rawmode `CMYK;I`
//! (every channel inverted, "Adobe polarity"), then `convert("RGB")`. [`decode_as`] serves a
//! container that embeds a JPEG and sets the plugin's `jpegmode` (BLP: `CMYK`).

use super::Decoded;
use crate::{Error, Limits, Orientation, Result, RgbImage};
use turbojpeg::{Colorspace, Decompressor, Image, PixelFormat};

const FORMAT: &str = "JPEG";

/// Decodes a JPEG; the header is checked against `limits` before the pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    decode_as(bytes, limits, FourComponents::Guessed)
}

/// The colour space of a 4-component JPEG's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FourComponents {
    /// As libjpeg guesses it: YCCK when an Adobe marker's transform is not 0, else CMYK.
    Guessed,
    /// CMYK whatever the Adobe marker says: the `jpegmode` `CMYK` (JpegDecode.c sets libjpeg's
    /// `jpeg_color_space` to `JCS_CMYK`), no YCC conversion of the first three channels.
    Cmyk,
}

/// As [`decode`], a 4-component JPEG's data taken as `four` says.
pub(super) fn decode_as(bytes: &[u8], limits: &Limits, four: FourComponents) -> Result<Decoded> {
    let mut decompressor = Decompressor::new().map_err(|e| Error::malformed(FORMAT, e))?;
    // TurboJPEG fails on a libjpeg warning in the headers (junk before a marker, a bad ICC
    // profile marker), in `decompress` too, which reads the headers first; libjpeg as Pillow
    // drives it reads on, discarding the junk. The same stream without what libjpeg discards
    // (and without the ICC markers, which do not touch the pixels) decodes the same pixels.
    let cleaned;
    let mut jpeg = bytes;
    let header = match decompressor.read_header(jpeg) {
        Err(error) if is_benign_warning(&error.to_string()) => {
            cleaned = without_header_junk(bytes).ok_or_else(|| classify(error, bytes))?;
            jpeg = &cleaned;
            decompressor.read_header(jpeg)
        }
        other => other,
    };
    // An Adobe transform libjpeg does not know: it warns and takes the data as YCbCr (3
    // components) or YCCK (4); TurboJPEG fails. The transform libjpeg falls back to, written
    // into the stream, gives the same reading without the warning.
    let probe;
    let known;
    let header = match header {
        Err(error) if error.to_string().contains("Unknown Adobe color transform code") => {
            probe = with_adobe_transform(jpeg, 0);
            let four = decompressor.read_header(&probe).map_err(|e| classify(e, bytes))?.colorspace == Colorspace::CMYK;
            known = with_adobe_transform(jpeg, if four { 2 } else { 1 });
            jpeg = &known;
            decompressor.read_header(jpeg)
        }
        other => other,
    };
    let header = header.map_err(|e| classify(e, bytes))?;
    let (width, height) = (header.width, header.height);
    let cmyk = matches!(header.colorspace, Colorspace::CMYK | Colorspace::YCCK);
    // An Adobe transform of 0 makes libjpeg take the data as CMYK, as setting
    // `jpeg_color_space` after the header does.
    let patched;
    if four == FourComponents::Cmyk && header.colorspace == Colorspace::YCCK {
        patched = with_adobe_transform(jpeg, 0);
        jpeg = &patched;
    }
    limits.check(width as u64, height as u64)?;
    let dims = (u32::try_from(width), u32::try_from(height));
    let (Ok(w32), Ok(h32)) = dims else {
        return Err(Error::malformed(FORMAT, format!("dimensions {width}x{height}")));
    };
    let format = if cmyk { PixelFormat::CMYK } else { PixelFormat::RGB };
    let channels = format.size();
    // Every byte is written by the decoder.
    let mut pixels = crate::buffer_pool::take(width * height * channels);
    let image = Image { pixels: pixels.as_mut_slice(), width, pitch: width * channels, height, format };
    if let Err(error) = decompressor.decompress(jpeg, image) {
        // TurboJPEG reports libjpeg warnings as failures too; the image is complete after a
        // warning, and Pillow (which silences warnings) accepts it, except at the end of the
        // data, where Pillow raises "image file is truncated".
        let message = error.to_string();
        if !is_benign_warning(&message) {
            return Err(classify(error, bytes));
        }
    }
    let rgb = if cmyk {
        let rgb = cmyk_inverted_to_rgb(&pixels);
        crate::buffer_pool::give(pixels);
        rgb
    } else {
        pixels
    };
    Ok(Decoded { image: RgbImage::from_parts(w32, h32, rgb), orientation: orientation(bytes) })
}

/// Pillow's `CMYK;I` unpacker (`255 - v` per channel) followed by its `cmyk2rgb`:
/// `nk = 255 - k; out = CLIP8(nk - MULDIV255(c, nk))` with `MULDIV255(a, b) = ((a*b + 128) >> 8
/// + a*b + 128) >> 8`.
fn cmyk_inverted_to_rgb(cmyk: &[u8]) -> Vec<u8> {
    let mut rgb = Vec::with_capacity(cmyk.len() / 4 * 3);
    for px in cmyk.chunks_exact(4) {
        let nk = 255 - i32::from(255 - px[3]);
        for &raw in &px[..3] {
            let c = i32::from(255 - raw);
            let t = c * nk + 128;
            let muldiv = ((t >> 8) + t) >> 8;
            rgb.push((nk - muldiv).clamp(0, 255) as u8);
        }
    }
    rgb
}

/// libjpeg's warning texts (`JWRN_*` of jerror.h) that leave a complete image. "Premature end of
/// JPEG file" is deliberately absent: that is a truncated file.
pub(super) fn is_benign_warning(message: &str) -> bool {
    const WARNINGS: &[&str] = &[
        "Corrupt JPEG data",
        "Unknown Adobe color transform code",
        "Inconsistent progression sequence",
        "Warning: unknown JFIF revision number",
        "Invalid SOS parameters for sequential JPEG",
        "Application transferred too many scanlines",
    ];
    WARNINGS.iter().any(|w| message.contains(w))
}

/// The error kind of a failed decode. The data is truncated when libjpeg ran out of it
/// ("Premature end of JPEG file") or when it holds no end-of-image marker at all: libjpeg then
/// reports what it missed first (a cut in the headers is "missing SOS marker"). `FF D9` cannot
/// occur inside entropy-coded data (an `FF` there is stuffed as `FF 00`).
fn classify(error: turbojpeg::Error, bytes: &[u8]) -> Error {
    let detail = error.to_string();
    let no_end_marker = !bytes.windows(2).any(|w| w == [0xFF, 0xD9]);
    if detail.contains("Premature end of JPEG file") || bytes.len() < 4 || no_end_marker {
        Error::Truncated { format: FORMAT, detail }
    } else if detail.contains("Unsupported JPEG data precision") || detail.contains("Unsupported color conversion") {
        Error::unsupported(FORMAT, detail)
    } else {
        Error::malformed(FORMAT, detail)
    }
}

/// The orientation Pillow's `getexif()` reads: the EXIF block is the first APP1 segment
/// starting `Exif\0\0`, with the payloads of later ones appended (Pillow concatenates them);
/// the XMP packet (used without an EXIF Orientation) is the last APP1 segment starting
/// `http://ns.adobe.com/xap/1.0/\0`, after that prefix. Markers are scanned up to SOS.
fn orientation(bytes: &[u8]) -> Orientation {
    let mut exif = Vec::new();
    let mut xmp: Option<&[u8]> = None;
    let mut pos = 2;
    while pos + 1 < bytes.len() {
        if bytes[pos] != 0xFF {
            pos += 1; // Pillow skips non-0xFF junk between segments.
            continue;
        }
        let marker = bytes[pos + 1];
        match marker {
            0xFF => {
                pos += 1;
                continue;
            }
            0xDA | 0xD9 => break,
            0x00 | 0x01 | 0xD0..=0xD7 => {
                pos += 2;
                continue;
            }
            _ => {}
        }
        let Some(len) = bytes.get(pos + 2..pos + 4).map(|b| usize::from(u16::from_be_bytes([b[0], b[1]]))) else {
            break;
        };
        let Some(segment) = bytes.get(pos + 4..pos + 2 + len.max(2)) else { break };
        if marker == 0xE1 && segment.starts_with(b"Exif\0\0") {
            exif.extend_from_slice(if exif.is_empty() { segment } else { &segment[6..] });
        } else if marker == 0xE1 && segment.starts_with(XMP_PREFIX) {
            xmp = segment.get(XMP_PREFIX.len()..);
        }
        pos += 2 + len.max(2);
    }
    Orientation::from_exif_or_xmp((!exif.is_empty()).then_some(&exif[..]), xmp)
}

/// The stream libjpeg reads up to the first SOS, rebuilt without what it discards with a
/// warning: bytes other than `FF` before a marker, `FF 00` pairs and fill `FF`s (its
/// `next_marker`), and without the APP2 `ICC_PROFILE` segments. From the first SOS on, the
/// bytes are unchanged. `None` when the headers end before a SOS.
fn without_header_junk(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = bytes.get(..2)?.to_vec();
    let mut pos = 2;
    loop {
        let marker = loop {
            while *bytes.get(pos)? != 0xFF {
                pos += 1;
            }
            while *bytes.get(pos)? == 0xFF {
                pos += 1;
            }
            pos += 1;
            if bytes[pos - 1] != 0 {
                break bytes[pos - 1];
            }
        };
        if marker == 0xDA {
            out.extend_from_slice(&[0xFF, 0xDA]);
            out.extend_from_slice(&bytes[pos..]);
            return Some(out);
        }
        if matches!(marker, 0x01 | 0xD0..=0xD9) {
            out.extend_from_slice(&[0xFF, marker]);
            continue;
        }
        let len = usize::from(u16::from_be_bytes([*bytes.get(pos)?, *bytes.get(pos + 1)?]));
        let segment = bytes.get(pos..pos + len.max(2))?;
        if !(marker == 0xE2 && segment.get(2..).is_some_and(|s| s.starts_with(b"ICC_PROFILE\0"))) {
            out.extend_from_slice(&[0xFF, marker]);
            out.extend_from_slice(segment);
        }
        pos += segment.len();
    }
}

/// The stream with the transform byte of every Adobe APP14 segment libjpeg reads (`Adobe`
/// and at least 12 bytes of data) set to `transform`, up to the first SOS; markers are found
/// as libjpeg's `next_marker` finds them (skipping other bytes and fill `FF`s).
fn with_adobe_transform(bytes: &[u8], transform: u8) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let mut pos = 2;
    loop {
        while bytes.get(pos).is_some_and(|&b| b != 0xFF) {
            pos += 1;
        }
        while bytes.get(pos) == Some(&0xFF) {
            pos += 1;
        }
        let Some(&marker) = bytes.get(pos) else { return out };
        pos += 1;
        match marker {
            0xDA | 0xD9 => return out,
            0x00 | 0x01 | 0xD0..=0xD8 => continue,
            _ => {}
        }
        let Some(len) = bytes.get(pos..pos + 2).map(|b| usize::from(u16::from_be_bytes([b[0], b[1]]))) else {
            return out;
        };
        let data = bytes.get(pos + 2..pos + len.max(2)).unwrap_or(&[]);
        if marker == 0xEE && data.len() >= 12 && data.starts_with(b"Adobe") {
            out[pos + 2 + 11] = transform;
        }
        pos += len.max(2);
    }
}

const XMP_PREFIX: &[u8] = b"http://ns.adobe.com/xap/1.0/\0";
