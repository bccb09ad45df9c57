//! PNG through the `png` crate, converted to RGB with Pillow's semantics for every colour type
//! (`PngImagePlugin` modes, then `convert("RGB")`):
//!
//! | PNG                        | Pillow mode | RGB                                             |
//! |----------------------------|-------------|-------------------------------------------------|
//! | gray 1/2/4/8 (± tRNS)      | 1 / L       | gray scaled to 8 bits, replicated               |
//! | gray 16 (± tRNS)           | I;16        | `v > 255 ? 255 : v`, replicated (`I16_RGB`)     |
//! | gray+alpha 8               | LA          | gray replicated, alpha dropped                  |
//! | gray+alpha 16              | RGBA        | high byte of gray replicated, alpha dropped     |
//! | RGB / RGBA 8               | RGB / RGBA  | alpha dropped (never composited)                |
//! | RGB / RGBA 16              | RGB / RGBA  | high byte of each channel, alpha dropped        |
//! | palette (± tRNS)           | P           | palette lookup, transparency ignored            |
//!
//! Checksums as Pillow checks them: the CRC of every chunk before the first `IDAT` (its
//! `_open` loop, `ImageFile.LOAD_TRUNCATED_IMAGES` being false), none of the image data's or
//! the later chunks' (`load_read` and `load_end` skip them), and no Adler-32 (Pillow's
//! `ZipDecode` stops at the last row).
//!
//! The orientation is `PngImageFile.getexif()`'s: the `eXIf` chunk (before or after the image
//! data), else ImageMagick's "Raw profile type exif" text chunk, and without an EXIF
//! Orientation the XMP packet's `tiff:Orientation` (the "XML:com.adobe.xmp" text chunk).

use super::Decoded;
use super::bytes::be32;
use crate::{Error, Limits, Orientation, Result, RgbImage};
use png::{BitDepth, ColorType, DecodingError, Transformations};
use std::io::Cursor;

const FORMAT: &str = "PNG";

/// Decodes a PNG; the header is checked against `limits` before the pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    // Our own limit is on pixels, checked below; the crate's byte limit would be a second,
    // different one.
    if let Some(error) = header_crc_error(bytes) {
        return Err(error);
    }
    let mut options = png::DecodeOptions::default();
    options.set_ignore_crc(true);
    options.set_ignore_adler32(false);
    let mut decoder = png::Decoder::new_with_options(Cursor::new(bytes), options);
    decoder.set_limits(png::Limits { bytes: usize::MAX });
    // EXPAND: palette -> RGB(A), gray below 8 bits -> 8 bits, tRNS -> alpha channel.
    decoder.set_transformations(Transformations::EXPAND);
    let header = decoder.read_header_info().map_err(classify)?;
    let (width, height) = (header.width, header.height);
    limits.check(width.into(), height.into())?;
    let mut reader = decoder.read_info().map_err(classify)?;
    let source = (reader.info().color_type, reader.info().bit_depth);
    let size = reader.output_buffer_size().ok_or_else(|| Error::malformed(FORMAT, "image too large for memory"))?;
    // Every byte is written by `next_frame`.
    let mut buf = crate::buffer_pool::take(size);
    let frame = reader.next_frame(&mut buf).map_err(classify)?;
    let (out_color, out_depth) = (frame.color_type, frame.bit_depth);
    let line_size = frame.line_size;
    // Trailing chunks (an eXIf after IDAT); Pillow reads them leniently, so errors are ignored.
    let _ = reader.finish();
    if let Some(detail) = apng_sequence_error(bytes) {
        return Err(Error::malformed(FORMAT, detail));
    }
    if let Some(detail) = text_chunk_error(bytes) {
        return Err(Error::malformed(FORMAT, detail));
    }
    let exif = orientation(reader.info())?;

    let channels = out_color.samples();
    let sample_bytes = if out_depth == BitDepth::Sixteen { 2 } else { 1 };
    let pixel_bytes = channels * sample_bytes;
    let (w, h) = (width as usize, height as usize);
    let gray16 = source == (ColorType::Grayscale, BitDepth::Sixteen);
    let gray = matches!(out_color, ColorType::Grayscale | ColorType::GrayscaleAlpha);
    if pixel_bytes == 3 && line_size == w * 3 && buf.len() >= w * h * 3 {
        // RGB8: the frame is the image already.
        buf.truncate(w * h * 3);
        return Ok(Decoded { image: RgbImage::from_parts(width, height, buf), orientation: exif });
    }
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    for (y, out_row) in rgb.chunks_exact_mut(w * 3).enumerate() {
        let line = buf
            .get(y * line_size..y * line_size + w * pixel_bytes)
            .ok_or_else(|| Error::malformed(FORMAT, "short frame"))?;
        if pixel_bytes == 3 {
            out_row.copy_from_slice(line);
            continue;
        }
        for (dst, px) in out_row.chunks_exact_mut(3).zip(line.chunks_exact(pixel_bytes)) {
            if gray16 {
                // Pillow's I;16 -> RGB (`I16_RGB`): values above 255 saturate, no scaling.
                let v = u16::from_be_bytes([px[0], px[1]]);
                dst.fill(if v > 255 { 255 } else { v as u8 });
            } else if gray {
                dst.fill(px[0]);
            } else {
                // 8-bit: the samples; 16-bit: their high (first, big-endian) bytes.
                for (c, d) in dst.iter_mut().enumerate() {
                    *d = px[c * sample_bytes];
                }
            }
        }
    }
    crate::buffer_pool::give(buf);
    Ok(Decoded { image: RgbImage::from_parts(width, height, rgb), orientation: exif })
}

/// The error `PngImageFile` raises for APNG chunks while opening the file and loading its
/// first image: an `fcTL` or `fdAT` out of sequence (the first `fcTL` must be number 0, each
/// later one the previous plus one), a frame outside the image, truncated `acTL`/`fcTL`/`fdAT`.
/// Before the image data every chunk counts; after it, the chunks up to `IEND`, or up to the
/// next `fcTL` when the file is animated (an `acTL` of 1..=2^31 frames, plus one when the
/// image data is a default image outside the animation).
fn apng_sequence_error(bytes: &[u8]) -> Option<&'static str> {
    let (im_w, im_h) = (u64::from(be32(bytes, 16)?), u64::from(be32(bytes, 20)?));
    let (mut seq, mut n_frames, mut actl_seen, mut bbox) = (None::<u32>, None::<u32>, false, false);
    let (mut after_idat, mut animated, mut pos) = (false, false, 8usize);
    while let (Some(length), Some(kind)) = (be32(bytes, pos), bytes.get(pos + 4..pos + 8)) {
        let data = bytes.get(pos + 8..)?;
        let data = &data[..data.len().min(length as usize)];
        match kind {
            b"IDAT" if !after_idat => {
                after_idat = true;
                let frames = n_frames.unwrap_or(1) + u32::from(n_frames.is_some() && !bbox);
                animated = frames > 1;
            }
            b"IEND" => return None,
            b"acTL" if length < 8 => return Some("APNG contains truncated acTL chunk"),
            b"acTL" if !after_idat => {
                let n = be32(data, 0)?;
                n_frames = if actl_seen || n == 0 || n > 0x8000_0000 { None } else { Some(n) };
                actl_seen = true;
            }
            b"fcTL" if after_idat && animated => return None,
            b"fcTL" if length < 26 => return Some("APNG contains truncated fcTL chunk"),
            b"fcTL" | b"fdAT" => {
                if kind == b"fdAT" && length < 4 {
                    return Some("APNG contains truncated fDAT chunk");
                }
                let number = be32(data, 0)?;
                let in_order = match seq {
                    None => kind == b"fcTL" && number == 0,
                    Some(previous) => u64::from(previous) + 1 == u64::from(number),
                };
                if !in_order {
                    return Some("APNG contains frame sequence errors");
                }
                seq = Some(number);
                if kind == b"fcTL" {
                    let field = |at| be32(data, at).map(u64::from);
                    let (w, h, x, y) = (field(4)?, field(8)?, field(12)?, field(16)?);
                    if x + w > im_w || y + h > im_h {
                        return Some("APNG contains invalid frames");
                    }
                    bbox |= !after_idat;
                }
            }
            _ => {}
        }
        pos = pos.checked_add(12)?.checked_add(length as usize)?;
    }
    None
}

/// The error `PngStream.crc` raises while `PngImageFile._open` reads the chunks before the
/// first `IDAT` (or `fdAT`, or an early `IEND`), with its message: a chunk whose CRC-32 (over
/// its type and data) is not the stored one ([`Error::Malformed`]), or whose CRC is cut off by
/// the end of the file ([`Error::Truncated`]). Chunks that run past the end are left to the
/// decoder.
fn header_crc_error(bytes: &[u8]) -> Option<Error> {
    let mut pos = 8usize;
    while let (Some(length), Some(kind)) = (be32(bytes, pos), bytes.get(pos + 4..pos + 8)) {
        if matches!(kind, b"IDAT" | b"fdAT" | b"IEND") {
            return None;
        }
        let end = pos.checked_add(8)?.checked_add(length as usize)?;
        let typed = bytes.get(pos + 4..end)?;
        let name = String::from_utf8_lossy(kind);
        let Some(stored) = be32(bytes, end) else {
            let detail = format!("broken PNG file (incomplete checksum in b'{name}')");
            return Some(Error::Truncated { format: FORMAT, detail });
        };
        let mut crc = flate2::Crc::new();
        crc.update(typed);
        if crc.sum() != stored {
            return Some(Error::malformed(FORMAT, format!("broken PNG file (bad header checksum in b'{name}')")));
        }
        pos = end.checked_add(4)?;
    }
    None
}

/// `PngImagePlugin.MAX_TEXT_CHUNK` (`ImageFile.SAFEBLOCK`): the most bytes one compressed text
/// or ICC chunk may inflate to.
const MAX_TEXT_CHUNK: usize = 1 << 20;

/// The error `PngImageFile` raises for a compressed metadata chunk, before or after the image
/// data, up to `IEND`: a `zTXt` or `iCCP` whose compression method is not 0 (SyntaxError, so
/// `Image.open` finds no format), or a `zTXt`, `iCCP` or compressed `iTXt` that inflates to more
/// than [`MAX_TEXT_CHUNK`] bytes ("Decompressed data too large"). Data that is not valid zlib
/// is ignored, as Pillow ignores `zlib.error` there.
fn text_chunk_error(bytes: &[u8]) -> Option<String> {
    let mut pos = 8usize;
    while let (Some(length), Some(kind)) = (be32(bytes, pos), bytes.get(pos + 4..pos + 8)) {
        let data = bytes.get(pos + 8..)?;
        let data = &data[..data.len().min(length as usize)];
        if !matches!(kind, b"IEND" | b"zTXt" | b"iCCP" | b"iTXt") {
            pos = pos.checked_add(12)?.checked_add(length as usize)?;
            continue;
        }
        let split = data.iter().position(|&b| b == 0).map(|i| (&data[..i], &data[i + 1..]));
        let compressed = match (kind, split) {
            (b"IEND", _) => return None,
            (b"zTXt", split) => {
                // Without a NUL the whole chunk is the keyword and the method reads as 0.
                let value = split.map_or(&[][..], |(_, value)| value);
                match value.split_first() {
                    Some((&method, _)) if method != 0 => {
                        return Some(format!("Unknown compression method {method} in zTXt chunk"));
                    }
                    Some((_, text)) => Some(text),
                    None => None,
                }
            }
            (b"iCCP", Some((_, value))) => match value.split_first() {
                Some((&method, _)) if method != 0 => {
                    return Some(format!("Unknown compression method {method} in iCCP chunk"));
                }
                Some((_, profile)) => Some(profile),
                None => None,
            },
            // iTXt: keyword NUL, compression flag, method, language NUL, translated keyword NUL, text.
            (b"iTXt", Some((_, &[1, 0, ref rest @ ..]))) => {
                let mut fields = rest.splitn(3, |&b| b == 0);
                fields.nth(2)
            }
            _ => None,
        };
        if compressed.is_some_and(inflates_past_limit) {
            return Some("Decompressed data too large for PngImagePlugin.MAX_TEXT_CHUNK".to_owned());
        }
        pos = pos.checked_add(12)?.checked_add(length as usize)?;
    }
    None
}

/// Whether zlib data inflates to more than [`MAX_TEXT_CHUNK`] bytes before it ends or turns
/// out invalid (inflating stops one byte past the limit).
fn inflates_past_limit(data: &[u8]) -> bool {
    let mut inflater = flate2::Decompress::new(true);
    let mut out = vec![0u8; 64 << 10];
    let mut produced = 0usize;
    loop {
        let (before_in, before_out) = (inflater.total_in(), inflater.total_out());
        let input = data.get(usize::try_from(before_in).unwrap_or(usize::MAX)..).unwrap_or(&[]);
        let room = out.len().min(MAX_TEXT_CHUNK + 1 - produced);
        let status = inflater.decompress(input, &mut out[..room], flate2::FlushDecompress::None);
        produced += usize::try_from(inflater.total_out() - before_out).unwrap_or(usize::MAX);
        if produced > MAX_TEXT_CHUNK {
            return true;
        }
        match status {
            Ok(flate2::Status::Ok) if inflater.total_in() > before_in || inflater.total_out() > before_out => {}
            _ => return false,
        }
    }
}

/// The orientation from the `eXIf` chunk, the "Raw profile type exif" text (hex digits after
/// three header lines; invalid hex is Pillow's `ValueError`) and the XMP text chunk.
fn orientation(info: &png::Info) -> Result<Orientation> {
    let text = |key: &str| -> Option<String> {
        let latin1 = info.uncompressed_latin1_text.iter().filter(|c| c.keyword == key).map(|c| c.text.clone());
        let zipped = info.compressed_latin1_text.iter().filter(|c| c.keyword == key).filter_map(|c| c.get_text().ok());
        let utf8 = info.utf8_text.iter().filter(|c| c.keyword == key).filter_map(|c| c.get_text().ok());
        latin1.chain(zipped).chain(utf8).last()
    };
    let raw_profile = || -> Result<Option<Vec<u8>>> {
        let Some(profile) = text("Raw profile type exif") else { return Ok(None) };
        let hex: String = profile.split('\n').skip(3).collect();
        from_hex(&hex)
            .map(Some)
            .ok_or_else(|| Error::malformed(FORMAT, "non-hexadecimal number in the raw EXIF profile"))
    };
    let exif = match info.exif_metadata.as_deref() {
        Some(exif) => Some(exif.to_vec()),
        None => raw_profile()?,
    };
    let xmp = text("XML:com.adobe.xmp");
    Ok(Orientation::from_exif_or_xmp(exif.as_deref(), xmp.as_deref().map(str::as_bytes)))
}

/// Python's `bytes.fromhex`: pairs of hex digits, ASCII whitespace allowed between pairs.
fn from_hex(text: &str) -> Option<Vec<u8>> {
    let mut bytes = text.bytes();
    let mut out = Vec::new();
    let digit = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    while let Some(b) = bytes.next() {
        if b.is_ascii_whitespace() {
            continue;
        }
        let high = digit(b)?;
        let low = digit(bytes.next()?)?;
        out.push(high << 4 | low);
    }
    Some(out)
}

fn classify(error: DecodingError) -> Error {
    match error {
        DecodingError::IoError(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Error::Truncated { format: FORMAT, detail: e.to_string() }
        }
        DecodingError::LimitsExceeded => Error::malformed(FORMAT, "decoder memory limit exceeded"),
        other => Error::malformed(FORMAT, other),
    }
}
