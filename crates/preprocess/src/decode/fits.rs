//! FITS files as Pillow's `FitsImagePlugin` loads them, then `convert("RGB")`.
//!
//! Header units of 80-byte cards (`KEYWORD = value / comment`), each ended by an `END` card and
//! padded to a multiple of 2880 bytes; the cards of every unit go into one table, which is
//! read at each `END` until it gives an image size (`NAXIS`, `NAXIS1`, `NAXIS2`; one axis is a
//! column of `1 × NAXIS1`). The first card that is neither in a unit nor a new unit starts the
//! data. `BITPIX` 8 is L, 16 `I;16` (big-endian), 32 `I` (big-endian), -32 and -64 `F`
//! (big-endian IEEE floats); rows are stored bottom-up. A `BINTABLE` extension with `ZIMAGE = T`
//! and `ZCMPTYPE = 'GZIP_1  '` holds the image gzipped after its table (`ZNAXIS…`, `ZBITPIX`,
//! no -64): Pillow decompresses `4 × width × height` bytes and takes from each 4-byte slot its
//! last `|ZBITPIX| / 8` bytes as a big-endian sample. `convert("RGB")` clamps the 16- and
//! 32-bit samples to `0..=255` and truncates floats clamped there.
//!
//! Where Pillow's `_open` raises anything but its "Not a FITS file" `SyntaxError` (a missing
//! or non-numeric card, no image, another `BITPIX`, the file ending inside a header),
//! `Image.open` fails: the file is FITS here and [`decode`] refuses it (a missing card is
//! Pillow's `KeyError`, which sends `Image.open` on to the next plugin). Pillow refuses every
//! gzipped image of 32-bit samples ("not enough image data": its slice for the first sample is
//! empty). The gzip members are read one after the other until the image is complete, zero bytes
//! between them skipped, as Python's `gzip` reads them; data shorter than the image is refused,
//! as Pillow refuses it.

use super::Decoded;
use super::im::float_gray;
use super::open_checks::{Header, NeedMore, Reader, Verdict, python_int};
use crate::{Error, Limits, Orientation, Result, RgbImage};
use std::io::Read;

const FORMAT: &str = "FITS";

/// The image `_open` finds.
struct Image {
    width: i64,
    height: i64,
    /// `BITPIX`: 8, 16, 32, -32 or -64 (not with `gzip`).
    bits: i64,
    gzip: bool,
    /// Where the data starts, as Pillow computes it (it may be negative for a gzipped image).
    offset: i128,
}

/// `_open`'s outcome: an image, or why `Image.open` fails.
type Opened = std::result::Result<Image, &'static str>;

/// Why `_open` stops: a `KeyError` (a card missing), which `ImageFile` turns into the
/// `SyntaxError` that sends `Image.open` on to the next plugin, or an error that ends it.
enum Stop {
    NotFits,
    Fails(&'static str),
}

/// Python's `bytes.strip()`.
fn strip(b: &[u8]) -> &[u8] {
    let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c');
    let start = b.iter().position(|c| !ws(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !ws(c)).map_or(start, |e| e + 1);
    &b[start..end.max(start)]
}

/// The header table: Python's dict of keyword to value (a later card replaces an earlier one).
struct Cards(Vec<(Vec<u8>, Vec<u8>)>);

impl Cards {
    fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| &v[..])
    }

    fn int(&self, key: &[u8]) -> std::result::Result<i64, Stop> {
        python_int(self.get(key).ok_or(Stop::NotFits)?).ok_or(Stop::Fails("a header value is not an integer"))
    }

    fn size(&self, prefix: &[u8]) -> std::result::Result<Option<(i64, i64)>, Stop> {
        let key = |name: &[u8]| [prefix, name].concat();
        Ok(match self.int(&key(b"NAXIS"))? {
            0 => None,
            1 => Some((1, self.int(&key(b"NAXIS1"))?)),
            _ => Some((self.int(&key(b"NAXIS1"))?, self.int(&key(b"NAXIS2"))?)),
        })
    }

    /// `_parse_headers`: `Ok(None)` where the table gives no size yet.
    fn image(&self) -> std::result::Result<Option<Image>, Stop> {
        let (mut prefix, mut offset, mut gzip) = (&b""[..], 0i128, false);
        if self.get(b"XTENSION") == Some(b"'BINTABLE'")
            && self.get(b"ZIMAGE") == Some(b"T")
            && self.get(b"ZCMPTYPE").ok_or(Stop::NotFits)? == b"'GZIP_1  '"
        {
            let (w, h) = self.size(b"")?.unwrap_or((0, 0));
            offset = i128::from(w) * i128::from(h) * i128::from(self.int(b"BITPIX")?.div_euclid(8));
            (prefix, gzip) = (b"Z", true);
        }
        let Some((width, height)) = self.size(prefix)? else { return Ok(None) };
        let bits = self.int(&[prefix, b"BITPIX"].concat())?;
        if !matches!(bits, 8 | 16 | 32 | -32) && (bits != -64 || gzip) {
            return Err(Stop::Fails("Unsupported number of bits"));
        }
        Ok(Some(Image { width, height, bits, gzip, offset }))
    }
}

/// `FitsImageFile._open` on the header: `Ok(None)` for its `SyntaxError` (the first card is not
/// `SIMPLE = T`), a missing card and a size that is not positive (`Image.open` then tries the
/// next plugin).
fn open(header: Header<'_>) -> std::result::Result<Option<Opened>, NeedMore> {
    let mut r = Reader::new(header);
    let (mut cards, mut in_unit, mut image) = (Cards(Vec::new()), false, None);
    loop {
        let card = r.read(80)?;
        if card.is_empty() {
            return Ok(Some(Err("Truncated FITS file")));
        }
        let keyword = strip(&card[..card.len().min(8)]);
        if keyword == b"SIMPLE" || keyword == b"XTENSION" {
            in_unit = true;
        } else if !cards.0.is_empty() && !in_unit {
            break;
        } else if keyword == b"END" {
            r.pos = r.pos.div_ceil(2880) * 2880;
            if image.is_none() {
                match cards.image() {
                    Ok(found) => image = found,
                    Err(Stop::NotFits) => return Ok(None),
                    Err(Stop::Fails(why)) => return Ok(Some(Err(why))),
                }
            }
            in_unit = false;
            continue;
        }
        if image.is_some() {
            continue;
        }
        let mut value = strip(card.get(8..).unwrap_or(&[]).split(|&b| b == b'/').next().unwrap_or(&[]));
        if let Some(rest) = value.strip_prefix(b"=") {
            value = strip(rest);
        }
        if cards.0.is_empty() && (!keyword.starts_with(b"SIMPLE") || value != b"T") {
            return Ok(None);
        }
        match cards.0.iter_mut().find(|(k, _)| k == keyword) {
            Some(entry) => entry.1 = value.to_vec(),
            None => cards.0.push((keyword.to_vec(), value.to_vec())),
        }
    }
    let Some(mut image) = image else { return Ok(Some(Err("No image data"))) };
    if image.width <= 0 || image.height <= 0 {
        return Ok(None);
    }
    image.offset += r.pos as i128 - 80;
    Ok(Some(Ok(image)))
}

/// `FitsImageFile._open`'s verdict on a header.
pub(crate) fn is_fits(header: Header<'_>) -> Verdict {
    match open(header) {
        Ok(Some(_)) => Verdict::Yes,
        Ok(None) => Verdict::No,
        Err(NeedMore) => Verdict::NeedMore,
    }
}

/// One big-endian sample of `bits` to its gray value.
fn gray(sample: &[u8], bits: i64) -> u8 {
    match bits {
        8 => sample[0],
        16 => u16::from_be_bytes([sample[0], sample[1]]).min(255) as u8,
        32 => i32::from_be_bytes([sample[0], sample[1], sample[2], sample[3]]).clamp(0, 255) as u8,
        -32 => float_gray(f32::from_be_bytes([sample[0], sample[1], sample[2], sample[3]])),
        _ => float_gray(f64::from_be_bytes(sample[..8].try_into().unwrap_or_default()) as f32),
    }
}

/// Decodes a FITS image; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let image = match open(Header { bytes, complete: true }) {
        Ok(Some(Ok(image))) => image,
        Ok(Some(Err(why))) => return Err(Error::malformed(FORMAT, why)),
        _ => return Err(Error::malformed(FORMAT, "not a FITS file")),
    };
    limits.check(image.width as u64, image.height as u64)?;
    let offset =
        usize::try_from(image.offset).map_err(|_| Error::malformed(FORMAT, "tile offset cannot be negative"))?;
    let (w, h) = (image.width as usize, image.height as usize);
    let truncated = || Error::Truncated { format: FORMAT, detail: "image file is truncated".into() };
    let rest = bytes.get(offset..).unwrap_or(&[]);
    let (data, slot, skip) = if image.gzip {
        // Pillow's slot slice `value[offset + 3 : offset - 1 : -1]` is empty for the first
        // 4-byte sample (a stop of -1 counts from the end), so its data falls 4 bytes short.
        if image.bits.unsigned_abs() == 32 {
            return Err(Error::malformed(FORMAT, "not enough image data"));
        }
        let out = gunzip(rest, w * h * 4)?;
        (std::borrow::Cow::Owned(out), 4, 4 - image.bits.unsigned_abs() as usize / 8)
    } else {
        let sample = image.bits.unsigned_abs() as usize / 8;
        let data = rest.get(..w * h * sample).ok_or_else(truncated)?;
        (std::borrow::Cow::Borrowed(data), sample, 0)
    };
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    for (y, out) in rgb.chunks_exact_mut(w * 3).enumerate() {
        let row = &data[(h - 1 - y) * w * slot..][..w * slot];
        for (s, px) in row.chunks_exact(slot).zip(out.chunks_exact_mut(3)) {
            px.fill(gray(&s[skip..], image.bits));
        }
    }
    Ok(Decoded { image: RgbImage::from_parts(w as u32, h as u32, rgb), orientation: Orientation::Normal })
}

/// The first `want` bytes of the gzip members in `data`, as Python's `gzip` reads them: member
/// after member while more is needed, each member's trailer checked before the next is read,
/// zero bytes between members skipped. Fewer bytes than `want` is an error.
fn gunzip(mut data: &[u8], want: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut first = true;
    while out.len() < want {
        if !first {
            data = &data[data.iter().position(|&b| b != 0).unwrap_or(data.len())..];
        }
        if data.is_empty() {
            return Err(Error::unsupported(FORMAT, "gzip data shorter than the image"));
        }
        // A member read to its end has had its trailer checked; one that fills the image is
        // left unread past it, as Python leaves it.
        let mut member = flate2::bufread::GzDecoder::new(data);
        let need = (want - out.len()) as u64;
        (&mut member)
            .take(need)
            .read_to_end(&mut out)
            .map_err(|e| Error::malformed(FORMAT, format!("gzip data: {e}")))?;
        data = member.into_inner();
        first = false;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fits(cards: &[&str], data: &[u8]) -> Vec<u8> {
        let mut head: String = cards.iter().chain(&["END"]).map(|c| format!("{c:<80}")).collect();
        head.push_str(&" ".repeat(head.len().next_multiple_of(2880) - head.len()));
        [head.as_bytes(), data].concat()
    }

    const IMAGE: [&str; 5] = ["SIMPLE  = T", "BITPIX  = 16", "NAXIS   = 2", "NAXIS1  = 2", "NAXIS2  = 1"];

    /// The expectations are Pillow 13's on the same files.
    #[test]
    fn samples_rows_and_short_data_cards_as_pillow() {
        let data: Vec<u8> = [1u16, 300].iter().flat_map(|v| v.to_be_bytes()).chain([0; 76]).collect();
        let decoded = decode(&fits(&IMAGE, &data), &Limits::default()).unwrap();
        assert_eq!(decoded.image.data(), &[1, 1, 1, 255, 255, 255]);
        // Data shorter than a card: Pillow starts it 80 bytes before the end of what it read,
        // in the header's padding (spaces, 0x2020).
        let decoded = decode(&fits(&IMAGE, &[0, 9, 0, 7]), &Limits::default()).unwrap();
        assert_eq!(decoded.image.data(), &[255; 6]);
    }

    #[test]
    fn verdicts_and_refusals() {
        let verdict = |bytes: &[u8], complete| is_fits(Header { bytes, complete });
        let whole = fits(&IMAGE, &[0; 80]);
        assert_eq!(verdict(&whole, true), Verdict::Yes);
        assert_eq!(verdict(&whole[..200], false), Verdict::NeedMore);
        assert_eq!(verdict(&fits(&["SIMPLE  = F"], &[0; 80]), true), Verdict::No);
        assert_eq!(verdict(&fits(&IMAGE[..4], &[0; 80]), true), Verdict::No);
        let refused = |cards: &[&str]| decode(&fits(cards, &[0; 80]), &Limits::default()).unwrap_err();
        assert!(matches!(
            refused(&["SIMPLE  = T", "BITPIX  = 64", "NAXIS   = 1", "NAXIS1  = 2"]),
            Error::Malformed { .. }
        ));
        assert!(matches!(refused(&["SIMPLE  = T", "NAXIS   = 0"]), Error::Malformed { .. }));
        assert!(matches!(
            refused(&["SIMPLE  = T", "BITPIX  = 8", "NAXIS   = 1", "NAXIS1  = 200"]),
            Error::Truncated { .. }
        ));
    }
}
