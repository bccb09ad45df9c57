//! FTEX textures (IW2:EOC) as Pillow's `FtexImagePlugin` loads them, then `convert("RGB")`.
//!
//! After the magic `FTEX`, little-endian signed 32-bit fields: version, width, height, mipmap
//! count, format count (Pillow reads only files of one format), then that format's code and
//! the offset of its first mipmap. At that offset a signed 32-bit byte count precedes the
//! mipmap's data: Pillow reads that many bytes (a negative count reads the rest of the file),
//! and decodes them as BC1 blocks (code 0, mode RGBA: transparent texels are black, and the
//! alpha is dropped) or as raw RGB rows (code 1). Data shorter than the image is "image file is
//! truncated"; bytes past it are ignored.

use super::Decoded;
use super::bcn::{Bcn, blocks};
use super::bytes::le32;
use super::open_checks::{Header, Reader, Verdict, verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "FTEX";

/// The fixed header: magic, version, width, height, mipmap count, format count, format code
/// and mipmap offset.
const HEADER: usize = 32;

/// A signed little-endian 32-bit field at `at` (`None` past the end).
fn field(bytes: &[u8], at: usize) -> Option<i32> {
    le32(bytes, at).map(|v| v as i32)
}

/// `FtexImageFile._open`'s verdict: `No` where it raises `struct.error` (a field past the end
/// of the file), so that `Image.open` tries the next plugin; otherwise `Yes`, and [`decode`]
/// refuses what Pillow refuses: its `ValueError`s (several formats, a negative offset, an
/// unknown format code) end `Image.open`, and so does a size that is not positive, found
/// after `_open` has closed the file the next plugins would read.
pub(crate) fn is_ftex(header: Header<'_>) -> Verdict {
    verdict(|| {
        let mut r = Reader::new(header);
        let int = |r: &mut Reader<'_>| r.read(4).map(|b| le32(b, 0).map(|v| v as i32));
        r.read(4)?;
        // Version, width, height, mipmap count, then the format count.
        for _ in 0..4 {
            if int(&mut r)?.is_none() {
                return Ok(false);
            }
        }
        match int(&mut r)? {
            None => return Ok(false),
            Some(formats) if formats != 1 => return Ok(true),
            Some(_) => {}
        }
        let (Some(_code), Some(offset)) = (int(&mut r)?, int(&mut r)?) else { return Ok(false) };
        let Ok(offset) = usize::try_from(offset) else { return Ok(true) };
        r.pos = offset;
        Ok(int(&mut r)?.is_some())
    })
}

/// Decodes an FTEX texture; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    if !bytes.starts_with(b"FTEX") {
        return Err(Error::malformed(FORMAT, "not an FTEX file"));
    }
    // Pillow's `struct.unpack` on a short read: the plugin gives up, and no other identifies it.
    let header = |at| field(bytes, at).ok_or_else(|| Error::malformed(FORMAT, "header ends early"));
    let (width, height) = (header(8)?, header(12)?);
    let format_count = header(20)?;
    if format_count != 1 {
        return Err(Error::unsupported(FORMAT, format!("{format_count} texture formats (Pillow reads one)")));
    }
    let (code, offset) = (header(24)?, header(28)?);
    debug_assert!(bytes.len() >= HEADER);
    if width <= 0 || height <= 0 {
        return Err(Error::ZeroSize { width: width.max(0) as u64, height: height.max(0) as u64 });
    }
    let bcn = match code {
        0 => true,
        1 => false,
        other => return Err(Error::unsupported(FORMAT, format!("invalid texture compression format {other}"))),
    };
    let offset = usize::try_from(offset).map_err(|_| Error::malformed(FORMAT, "negative mipmap offset"))?;
    let size = field(bytes, offset).ok_or_else(|| Error::malformed(FORMAT, "mipmap offset past the end"))?;
    let rest = &bytes[offset + 4..];
    let data = usize::try_from(size).map_or(rest, |size| &rest[..size.min(rest.len())]);
    limits.check(width as u64, height as u64)?;
    let (w, h) = (width as usize, height as usize);
    let truncated = || Error::Truncated { format: FORMAT, detail: "image file is truncated".into() };
    let needed = if bcn { w.div_ceil(4) * h.div_ceil(4) * Bcn::Bc1.block_bytes() } else { w * h * 3 };
    if data.len() < needed {
        return Err(truncated());
    }
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    if bcn {
        blocks(data, Bcn::Bc1, w, h, &mut rgb).ok_or_else(truncated)?;
    } else {
        rgb.copy_from_slice(&data[..needed]);
    }
    Ok(Decoded { image: RgbImage::from_parts(w as u32, h as u32, rgb), orientation: Orientation::Normal })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An FTEX file of `width × height`, format `code`, its mipmap's byte count `size` and data.
    fn ftex(width: i32, height: i32, code: i32, size: i32, data: &[u8]) -> Vec<u8> {
        let mut file = b"FTEX".to_vec();
        for v in [1, width, height, 1, 1, code, HEADER as i32, size] {
            file.extend_from_slice(&v.to_le_bytes());
        }
        file.extend_from_slice(data);
        file
    }

    #[test]
    fn raw_rows_are_the_pixels_and_extra_bytes_are_ignored() {
        let data: Vec<u8> = (0..2 * 3 * 3 + 5).map(|i| i as u8).collect();
        let decoded = decode(&ftex(3, 2, 1, data.len() as i32, &data), &Limits::default()).unwrap();
        assert_eq!((decoded.image.width(), decoded.image.height()), (3, 2));
        assert_eq!(decoded.image.data(), &data[..18]);
        // A negative byte count reads the rest of the file.
        let decoded = decode(&ftex(3, 2, 1, -1, &data), &Limits::default()).unwrap();
        assert_eq!(decoded.image.data(), &data[..18]);
    }

    #[test]
    fn bc1_blocks_are_decoded_and_clipped() {
        // One block: colour 0 white, colour 1 black, every texel index 1 (black) but the first.
        let block = [0xFF, 0xFF, 0x00, 0x00, 0b0101_0100, 0x55, 0x55, 0x55];
        let decoded = decode(&ftex(2, 2, 0, 8, &block), &Limits::default()).unwrap();
        assert_eq!(decoded.image.data(), &[255, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn short_and_bad_files_are_refused_by_name() {
        let data = [7u8; 17];
        let truncated = decode(&ftex(3, 2, 1, 17, &data), &Limits::default());
        assert!(matches!(truncated, Err(Error::Truncated { .. })), "{truncated:?}");
        let short_count = decode(&ftex(3, 2, 1, 4, &[7u8; 18]), &Limits::default());
        assert!(matches!(short_count, Err(Error::Truncated { .. })), "{short_count:?}");
        assert!(matches!(decode(&ftex(3, 2, 2, 18, &[0; 18]), &Limits::default()), Err(Error::Unsupported { .. })));
        assert!(matches!(decode(&ftex(0, 2, 1, 18, &[0; 18]), &Limits::default()), Err(Error::ZeroSize { .. })));
        assert!(matches!(decode(&ftex(3, 2, 1, 18, &[])[..30], &Limits::default()), Err(Error::Malformed { .. })));
        let mut far = ftex(3, 2, 1, 18, &[0; 18]);
        far[28..32].copy_from_slice(&1000i32.to_le_bytes());
        assert!(matches!(decode(&far, &Limits::default()), Err(Error::Malformed { .. })));
        let huge = decode(&ftex(1 << 20, 1 << 20, 1, 0, &[]), &Limits::default());
        assert!(matches!(huge, Err(Error::TooManyPixels { .. })), "{huge:?}");
    }

    /// The verdicts follow Pillow 13 on the same files: the ones `Image.open` cannot identify
    /// are `No`, the ones it raises `ValueError` on are `Yes` (and refused by `decode`).
    #[test]
    fn open_verdicts_as_pillow() {
        let verdict = |bytes: &[u8]| is_ftex(Header { bytes, complete: true });
        assert_eq!(verdict(&ftex(3, 2, 1, 18, &[0; 18])), Verdict::Yes);
        assert_eq!(verdict(&ftex(3, 2, 1, 18, &[])[..30]), Verdict::No);
        assert_eq!(verdict(&ftex(0, 2, 1, 18, &[0; 18])), Verdict::Yes);
        assert_eq!(verdict(&ftex(0, 2, 2, 18, &[0; 18])), Verdict::Yes);
        let mut far = ftex(3, 2, 1, 18, &[0; 18]);
        far[28..32].copy_from_slice(&1000i32.to_le_bytes());
        assert_eq!(verdict(&far), Verdict::No);
        far[28..32].copy_from_slice(&(-5i32).to_le_bytes());
        assert_eq!(verdict(&far), Verdict::Yes);
        let whole = ftex(3, 2, 1, 18, &[0; 18]);
        assert_eq!(is_ftex(Header { bytes: &whole[..20], complete: false }), Verdict::NeedMore);
    }
}
