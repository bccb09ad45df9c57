//! McIdas area files as Pillow's `McIdasImagePlugin` loads them, then `convert("RGB")`.
//!
//! The area directory is the first 256 bytes: 64 big-endian signed 32-bit words `w[1..=64]`.
//! `w[11]` is the bytes per sample: 1 (mode L), 2 (I;16B) or 4 (I, from big-endian I;32B);
//! the size is `w[10] × w[9]`. The raw rows start at `w[34] + w[15]` and follow each other
//! every `w[15] + w[10]·w[11]·w[14]` bytes (a line prefix, then every band's samples; the
//! first band is the image), or every row's own length where that stride is shorter (Pillow's
//! raw decoder skips only positive padding). The last row needs only its own bytes.
//! `convert("RGB")` gives each gray value in every channel, clamped to `0..=255` for the 16-
//! and 32-bit samples.

use super::Decoded;
use super::bytes::be32;
use super::open_checks::{Header, Verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "MCIDAS";

/// The area directory's length.
const DIRECTORY: usize = 256;

/// What the area directory says of the image.
struct Area {
    width: i128,
    height: i128,
    /// Bytes per sample: 1, 2 or 4.
    sample: i128,
    /// The first row's offset and the distance between rows, as Pillow computes them (in
    /// Python's integers: `i128` holds every value of these sums of 32-bit products).
    offset: i128,
    stride: i128,
}

/// Word `w[index]` of the directory (1-based, as Pillow numbers them).
fn word(bytes: &[u8], index: usize) -> i128 {
    be32(bytes, (index - 1) * 4).map_or(0, |v| i128::from(v as i32))
}

/// The directory's image, or `None` where Pillow's `_open` raises `SyntaxError` (no
/// directory, a sample size it does not know) or the size is not positive.
fn area(bytes: &[u8]) -> Option<Area> {
    if bytes.len() < DIRECTORY || !bytes.starts_with(b"\0\0\0\0\0\0\0\x04") {
        return None;
    }
    let w = |index| word(bytes, index);
    let sample = w(11);
    if !matches!(sample, 1 | 2 | 4) || w(10) <= 0 || w(9) <= 0 {
        return None;
    }
    let offset = w(34) + w(15);
    let stride = w(15) + w(10) * w(11) * w(14);
    Some(Area { width: w(10), height: w(9), sample, offset, stride })
}

/// `McIdasImageFile._open`'s verdict on a header.
pub(crate) fn is_mcidas(header: Header<'_>) -> Verdict {
    match area(header.bytes) {
        Some(_) => Verdict::Yes,
        None if header.bytes.len() < DIRECTORY && !header.complete => Verdict::NeedMore,
        None => Verdict::No,
    }
}

/// Decodes a McIdas area file; the size is checked against `limits` before any pixel buffer
/// exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let Area { width, height, sample, offset, stride } =
        area(bytes).ok_or_else(|| Error::malformed(FORMAT, "not an McIdas area file"))?;
    if offset < 0 {
        return Err(Error::malformed(FORMAT, "tile offset cannot be negative"));
    }
    limits.check(width as u64, height as u64)?;
    let (w, h, sample) = (width as usize, height as usize, sample as usize);
    let row = w * sample;
    let stride = stride.max(row as i128);
    let end = offset + (h as i128 - 1) * stride + row as i128;
    if end > bytes.len() as i128 {
        return Err(Error::Truncated { format: FORMAT, detail: "image file is truncated".into() });
    }
    let (offset, stride) = (offset as usize, stride as usize);
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    for (y, out) in rgb.chunks_exact_mut(w * 3).enumerate() {
        let samples = &bytes[offset + y * stride..][..row];
        for (s, px) in samples.chunks_exact(sample).zip(out.chunks_exact_mut(3)) {
            let gray = match sample {
                1 => s[0],
                2 => u16::from_be_bytes([s[0], s[1]]).min(255) as u8,
                _ => i32::from_be_bytes([s[0], s[1], s[2], s[3]]).clamp(0, 255) as u8,
            };
            px.fill(gray);
        }
    }
    Ok(Decoded { image: RgbImage::from_parts(w as u32, h as u32, rgb), orientation: Orientation::Normal })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An area file of `width × height` samples of `sample` bytes, `bands` bands, a line
    /// prefix of `prefix` bytes and the data at `data_offset`, followed by `data`.
    fn file(
        width: i32,
        height: i32,
        sample: i32,
        (bands, prefix, data_offset): (i32, i32, i32),
        data: &[u8],
    ) -> Vec<u8> {
        let mut w = [0i32; 65];
        w[2] = 4;
        (w[9], w[10], w[11], w[14], w[15], w[34]) = (height, width, sample, bands, prefix, data_offset);
        let mut bytes: Vec<u8> = w[1..].iter().flat_map(|v| v.to_be_bytes()).collect();
        bytes.extend_from_slice(data);
        bytes
    }

    fn gray(decoded: &Decoded) -> Vec<u8> {
        decoded.image.data().iter().step_by(3).copied().collect()
    }

    /// The expectations are Pillow 13's, read off the same files.
    #[test]
    fn samples_strides_and_clamps_as_pillow() {
        let limits = Limits::default();
        let data: Vec<u8> = (0..40).collect();
        let decoded = decode(&file(3, 2, 1, (1, 0, 256), &data), &limits).unwrap();
        assert_eq!(gray(&decoded), [0, 1, 2, 3, 4, 5]);
        // A prefix of 3 and two bands: rows 7 bytes apart, the first at 259; the last row
        // needs only its own bytes.
        let decoded = decode(&file(2, 2, 1, (2, 3, 256), &data[..12]), &limits).unwrap();
        assert_eq!(gray(&decoded), [3, 4, 10, 11]);
        // A stride shorter than a row (no bands, a negative one): the rows follow each other.
        let data: Vec<u8> = (100..160).collect();
        assert_eq!(gray(&decode(&file(3, 3, 1, (0, 2, 256), &data), &limits).unwrap())[..4], [102, 103, 104, 105]);
        assert_eq!(gray(&decode(&file(3, 3, 1, (-1, 1, 256), &data), &limits).unwrap())[..4], [101, 102, 103, 104]);
        let wide: Vec<u8> = [1u16, 255, 4000].iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(gray(&decode(&file(3, 1, 2, (1, 0, 256), &wide), &limits).unwrap()), [1, 255, 255]);
        let words: Vec<u8> = [-5i32, 255, 4000].iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(gray(&decode(&file(3, 1, 4, (1, 0, 256), &words), &limits).unwrap()), [0, 255, 255]);
    }

    #[test]
    fn bad_files_are_refused_and_other_plugins_may_try_the_rest() {
        let limits = Limits::default();
        let short = decode(&file(3, 2, 1, (1, 0, 256), &[0; 5]), &limits);
        assert!(matches!(short, Err(Error::Truncated { .. })), "{short:?}");
        let negative = decode(&file(3, 2, 1, (1, 0, -300), &[0; 6]), &limits);
        assert!(matches!(negative, Err(Error::Malformed { .. })), "{negative:?}");
        let huge = decode(&file(1 << 20, 1 << 20, 1, (1, 0, 256), &[]), &limits);
        assert!(matches!(huge, Err(Error::TooManyPixels { .. })), "{huge:?}");
        for other in [file(3, 2, 3, (1, 0, 256), &[0; 18]), file(0, 2, 1, (1, 0, 256), &[0; 18])] {
            assert_eq!(is_mcidas(Header { bytes: &other, complete: true }), Verdict::No);
        }
        let whole = file(3, 2, 1, (1, 0, 256), &[0; 6]);
        assert_eq!(is_mcidas(Header { bytes: &whole[..100], complete: false }), Verdict::NeedMore);
        assert_eq!(is_mcidas(Header { bytes: &whole[..100], complete: true }), Verdict::No);
        assert_eq!(is_mcidas(Header { bytes: &whole, complete: true }), Verdict::Yes);
    }
}
