//! EXIF orientation, applied as the reference does for a file path: `ImageOps.exif_transpose`.

use crate::RgbImage;

/// The transposition `ImageOps.exif_transpose` applies for an EXIF Orientation value (tag
/// 0x0112): 2 flip left-right, 3 rotate 180, 4 flip top-bottom, 5 transpose, 6 rotate 270
/// (Pillow's `ROTATE_270`, i.e. 90° clockwise), 7 transverse, 8 rotate 90 (counter-clockwise).
/// Any other value (1, 0, 9, ...) leaves the image as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orientation {
    /// 1 (or any value Pillow ignores): no change.
    Normal,
    /// 2: `FLIP_LEFT_RIGHT`.
    FlipLeftRight,
    /// 3: `ROTATE_180`.
    Rotate180,
    /// 4: `FLIP_TOP_BOTTOM`.
    FlipTopBottom,
    /// 5: `TRANSPOSE` (swap x and y).
    Transpose,
    /// 6: `ROTATE_270` (90° clockwise).
    Rotate270,
    /// 7: `TRANSVERSE` (transpose across the other diagonal).
    Transverse,
    /// 8: `ROTATE_90` (90° counter-clockwise).
    Rotate90,
}

impl Orientation {
    /// The transposition for an EXIF Orientation value.
    pub fn from_exif_value(value: u32) -> Orientation {
        match value {
            2 => Orientation::FlipLeftRight,
            3 => Orientation::Rotate180,
            4 => Orientation::FlipTopBottom,
            5 => Orientation::Transpose,
            6 => Orientation::Rotate270,
            7 => Orientation::Transverse,
            8 => Orientation::Rotate90,
            _ => Orientation::Normal,
        }
    }

    /// Reads the Orientation tag from an EXIF block (a TIFF structure, optionally behind the
    /// `Exif\0\0` prefix of a JPEG APP1 segment) the way Pillow's `Image.getexif()` does: IFD0
    /// only, the first 0x0112 entry wins, numeric types only (BYTE/ASCII/UNDEFINED values are
    /// bytes or text in Pillow and never match), the first value when the count is larger, and
    /// anything malformed reads as "no orientation".
    pub fn from_exif(exif: &[u8]) -> Orientation {
        let tiff = exif.strip_prefix(b"Exif\0\0").unwrap_or(exif);
        orientation_value(tiff).map_or(Orientation::Normal, Orientation::from_exif_value)
    }

    /// The orientation Pillow 13's `Image.getexif()` gives a file with this EXIF block (if any)
    /// and this XMP packet (if any): the EXIF Orientation when IFD0 holds the tag at all (even
    /// with a value `exif_transpose` ignores), else the XMP `tiff:Orientation`
    /// ([`Orientation::from_xmp`]).
    pub(crate) fn from_exif_or_xmp(exif: Option<&[u8]>, xmp: Option<&[u8]>) -> Orientation {
        if let Some(exif) = exif
            && has_orientation_tag(exif.strip_prefix(b"Exif\0\0").unwrap_or(exif))
        {
            return Orientation::from_exif(exif);
        }
        xmp.map_or(Orientation::Normal, Orientation::from_xmp)
    }

    /// Whether an EXIF block (optionally behind the `Exif\0\0` prefix) holds an Orientation tag
    /// that Pillow's `Image.getexif()` keeps, whatever its value.
    pub(crate) fn exif_has_orientation(exif: &[u8]) -> bool {
        has_orientation_tag(exif.strip_prefix(b"Exif\0\0").unwrap_or(exif))
    }

    /// The orientation of an XMP packet as `Image.getexif()` reads it: the first match of the
    /// regular expression `tiff:Orientation(="|>)([0-9])` (an attribute or an element), its
    /// digit taken as the EXIF Orientation value. No match is [`Orientation::Normal`].
    pub(crate) fn from_xmp(xmp: &[u8]) -> Orientation {
        const NAME: &[u8] = b"tiff:Orientation";
        let digit = (0..xmp.len()).filter(|&i| xmp[i..].starts_with(NAME)).find_map(|i| {
            let rest = &xmp[i + NAME.len()..];
            let value = rest.strip_prefix(b"=\"").or_else(|| rest.strip_prefix(b">"))?;
            value.first().filter(|d| d.is_ascii_digit()).map(|d| u32::from(d - b'0'))
        });
        digit.map_or(Orientation::Normal, Orientation::from_exif_value)
    }

    /// Applies the transposition (pixels are moved, never resampled).
    pub fn apply(self, image: RgbImage) -> RgbImage {
        let (w, h) = (image.width() as usize, image.height() as usize);
        // (output width, output height, source (x, y) of output pixel (x, y))
        let (ow, oh): (usize, usize) = match self {
            Orientation::Normal => return image,
            Orientation::FlipLeftRight | Orientation::Rotate180 | Orientation::FlipTopBottom => (w, h),
            _ => (h, w),
        };
        let src = image.data();
        // Every byte is written below.
        let mut out = crate::buffer_pool::take(ow * oh * 3);
        for (y, row) in out.chunks_exact_mut(ow * 3).enumerate() {
            for (x, px) in row.chunks_exact_mut(3).enumerate() {
                let (sx, sy) = match self {
                    Orientation::Normal => (x, y),
                    Orientation::FlipLeftRight => (w - 1 - x, y),
                    Orientation::Rotate180 => (w - 1 - x, h - 1 - y),
                    Orientation::FlipTopBottom => (x, h - 1 - y),
                    Orientation::Transpose => (y, x),
                    Orientation::Rotate270 => (y, h - 1 - x),
                    Orientation::Transverse => (w - 1 - y, h - 1 - x),
                    Orientation::Rotate90 => (w - 1 - y, x),
                };
                let i = (sy * w + sx) * 3;
                px.copy_from_slice(&src[i..i + 3]);
            }
        }
        RgbImage::from_parts(ow as u32, oh as u32, out)
    }
}

/// Whether IFD0 holds an Orientation (0x0112) entry that Pillow's `ImageFileDirectory_v2`
/// keeps: a known field type whose data lies inside the block.
fn has_orientation_tag(tiff: &[u8]) -> bool {
    let big_endian = match tiff.get(..4) {
        Some(b"II*\0") => false,
        Some(b"MM\0*") => true,
        _ => return false,
    };
    let reader = Reader { data: tiff, big_endian };
    let Some(ifd) = reader.u32(4).map(|v| v as usize) else { return false };
    let Some(count) = reader.u16(ifd) else { return false };
    (0..usize::from(count)).map(|i| ifd + 2 + 12 * i).any(|entry| {
        let unit: Option<usize> = match reader.u16(entry + 2) {
            Some(1 | 2 | 6 | 7) => Some(1),
            Some(3 | 8) => Some(2),
            Some(4 | 9 | 11 | 13) => Some(4),
            Some(5 | 10 | 12 | 16 | 17 | 18) => Some(8),
            _ => None,
        };
        let (Some(tag), Some(unit), Some(values)) = (reader.u16(entry), unit, reader.u32(entry + 4)) else {
            return false;
        };
        let Some(size) = unit.checked_mul(values as usize).filter(|&n| n > 0) else { return false };
        let at = if size <= 4 { Some(entry + 8) } else { reader.u32(entry + 8).map(|v| v as usize) };
        tag == 0x0112 && at.and_then(|at| at.checked_add(size)).is_some_and(|end| end <= tiff.len())
    })
}

/// The first value of IFD0's first 0x0112 entry, if numeric and integral.
fn orientation_value(tiff: &[u8]) -> Option<u32> {
    let big_endian = match tiff.get(..4)? {
        b"II*\0" => false,
        b"MM\0*" => true,
        _ => return None,
    };
    let reader = Reader { data: tiff, big_endian };
    let ifd = reader.u32(4)? as usize;
    let count = reader.u16(ifd)? as usize;
    for entry in (0..count).map(|i| ifd + 2 + 12 * i) {
        let Some(tag) = reader.u16(entry) else { break };
        if tag != 0x0112 {
            continue;
        }
        let kind = reader.u16(entry + 2)?;
        let values = reader.u32(entry + 4)? as usize;
        let size: usize = match kind {
            3 | 8 => 2,
            4 | 9 | 11 => 4,
            5 | 10 | 12 => 8,
            _ => return None,
        };
        if values == 0 {
            return None;
        }
        let total = size.checked_mul(values)?;
        let at = if total <= 4 { entry + 8 } else { reader.u32(entry + 8)? as usize };
        if at.checked_add(total)? > tiff.len() {
            return None;
        }
        let value: f64 = match kind {
            3 => reader.u16(at)?.into(),
            8 => (reader.u16(at)? as i16).into(),
            4 => reader.u32(at)?.into(),
            9 => (reader.u32(at)? as i32).into(),
            11 => f32::from_bits(reader.u32(at)?).into(),
            5 => f64::from(reader.u32(at)?) / f64::from(reader.u32(at + 4)?),
            10 => f64::from(reader.u32(at)? as i32) / f64::from(reader.u32(at + 4)? as i32),
            _ => f64::from_bits(reader.u64(at)?),
        };
        return (value.fract() == 0.0 && (1.0..=8.0).contains(&value)).then_some(value as u32);
    }
    None
}

struct Reader<'a> {
    data: &'a [u8],
    big_endian: bool,
}

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.data.get(at..at.checked_add(N)?)?.try_into().ok()
    }

    fn u16(&self, at: usize) -> Option<u16> {
        let b = self.bytes::<2>(at)?;
        Some(if self.big_endian { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) })
    }

    fn u32(&self, at: usize) -> Option<u32> {
        let b = self.bytes::<4>(at)?;
        Some(if self.big_endian { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
    }

    fn u64(&self, at: usize) -> Option<u64> {
        let b = self.bytes::<8>(at)?;
        Some(if self.big_endian { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
    }
}
