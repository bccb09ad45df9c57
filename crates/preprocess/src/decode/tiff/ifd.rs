//! The TIFF header and the first image file directory (IFD), classic and BigTIFF, as Pillow's
//! `Image.open` reads frame 0: every entry's type, count and value bytes, bounded by the input.

use crate::{Error, Result};

const FORMAT: &str = "TIFF";

/// Byte order of a TIFF file (`II` little-endian, `MM` big-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
}

impl ByteOrder {
    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            ByteOrder::Little => u16::from_le_bytes(b),
            ByteOrder::Big => u16::from_be_bytes(b),
        }
    }

    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            ByteOrder::Little => u32::from_le_bytes(b),
            ByteOrder::Big => u32::from_be_bytes(b),
        }
    }

    pub fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            ByteOrder::Little => u64::from_le_bytes(b),
            ByteOrder::Big => u64::from_be_bytes(b),
        }
    }
}

/// One directory entry: its field type, count and the bytes of its value (inline or at its
/// offset), already checked to lie inside the file.
#[derive(Debug, Clone, Copy)]
struct Entry<'a> {
    tag: u16,
    field_type: u16,
    value: &'a [u8],
}

/// The first IFD of a TIFF file.
#[derive(Debug)]
pub struct Ifd<'a> {
    pub order: ByteOrder,
    entries: Vec<Entry<'a>>,
}

/// Bytes of one value of a field type (TIFF 6 and BigTIFF types); `None` for unknown types,
/// which Pillow skips.
fn type_size(field_type: u16) -> Option<u64> {
    Some(match field_type {
        1 | 2 | 6 | 7 => 1,
        3 | 8 => 2,
        4 | 9 | 11 | 13 => 4,
        5 | 10 | 12 | 16 | 17 | 18 => 8,
        _ => return None,
    })
}

fn slice(bytes: &[u8], at: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(at).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    bytes.get(start..end)
}

fn truncated(detail: &str) -> Error {
    Error::Truncated { format: FORMAT, detail: detail.to_owned() }
}

impl<'a> Ifd<'a> {
    /// Parses the header and the first IFD. Entries whose value lies outside the file, is empty,
    /// or whose type is unknown, are dropped (Pillow warns and skips them), and so are repeats
    /// of a tag already read (Pillow 13's `ImageFileDirectory_v2.load`).
    pub fn first(bytes: &'a [u8]) -> Result<Self> {
        let head = bytes.get(..8).ok_or_else(|| truncated("header shorter than 8 bytes"))?;
        let order = match &head[..2] {
            b"II" => ByteOrder::Little,
            b"MM" => ByteOrder::Big,
            _ => return Err(Error::malformed(FORMAT, "not a TIFF byte order mark")),
        };
        let magic = order.u16([head[2], head[3]]);
        let big = match magic {
            42 => false,
            43 => true,
            other => return Err(Error::malformed(FORMAT, format!("version {other}"))),
        };
        let rd16 = |at: u64| slice(bytes, at, 2).map(|b| order.u16([b[0], b[1]]));
        let rd32 = |at: u64| slice(bytes, at, 4).map(|b| order.u32([b[0], b[1], b[2], b[3]]));
        let rd64 = |at: u64| slice(bytes, at, 8).map(|b| order.u64([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
        let (ifd_offset, count_size, entry_size, inline) = if big {
            (rd64(8).ok_or_else(|| truncated("BigTIFF header"))?, 8u64, 20u64, 8u64)
        } else {
            (u64::from(rd32(4).ok_or_else(|| truncated("header"))?), 2, 12, 4)
        };
        let count = if big { rd64(ifd_offset) } else { rd16(ifd_offset).map(u64::from) }
            .ok_or_else(|| truncated("IFD offset past the end of the file"))?;
        let mut entries = Vec::new();
        for i in 0..count {
            let Some(at) = i.checked_mul(entry_size).and_then(|o| o.checked_add(ifd_offset + count_size)) else {
                break;
            };
            let Some(raw) = slice(bytes, at, entry_size) else {
                return Err(truncated("IFD entries past the end of the file"));
            };
            let tag = order.u16([raw[0], raw[1]]);
            let field_type = order.u16([raw[2], raw[3]]);
            let n = if big {
                order.u64([raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10], raw[11]])
            } else {
                u64::from(order.u32([raw[4], raw[5], raw[6], raw[7]]))
            };
            let Some(size) = type_size(field_type).and_then(|s| s.checked_mul(n)) else { continue };
            let value_field = &raw[if big { 12 } else { 8 }..];
            let value = if size <= inline {
                value_field.get(..size as usize)
            } else {
                let offset = if big {
                    order.u64([
                        value_field[0],
                        value_field[1],
                        value_field[2],
                        value_field[3],
                        value_field[4],
                        value_field[5],
                        value_field[6],
                        value_field[7],
                    ])
                } else {
                    u64::from(order.u32([value_field[0], value_field[1], value_field[2], value_field[3]]))
                };
                slice(bytes, offset, size)
            };
            // Pillow keeps the first entry of a tag whose value it could read (non-empty,
            // inside the file); later entries of that tag are ignored.
            if let Some(value) = value.filter(|v| !v.is_empty())
                && !entries.iter().any(|e: &Entry<'_>| e.tag == tag)
            {
                entries.push(Entry { tag, field_type, value });
            }
        }
        Ok(Ifd { order, entries })
    }

    fn entry(&self, tag: u16) -> Option<&Entry<'a>> {
        self.entries.iter().find(|e| e.tag == tag)
    }

    /// Whether the IFD holds `tag`.
    pub fn has(&self, tag: u16) -> bool {
        self.entry(tag).is_some()
    }

    /// The integer values of `tag` (BYTE, SHORT, LONG, LONG8 and their signed kinds); `None`
    /// when absent or of another type.
    pub fn ints(&self, tag: u16) -> Option<Vec<u64>> {
        let e = self.entry(tag)?;
        let size = type_size(e.field_type)? as usize;
        let order = self.order;
        let values = e.value.chunks_exact(size).map(|c| match (e.field_type, c) {
            (1 | 7, [a]) => u64::from(*a),
            (6, [a]) => *a as i8 as i64 as u64,
            (3, [a, b]) => u64::from(order.u16([*a, *b])),
            (8, [a, b]) => order.u16([*a, *b]) as i16 as i64 as u64,
            (4 | 13, [a, b, c, d]) => u64::from(order.u32([*a, *b, *c, *d])),
            (9, [a, b, c, d]) => order.u32([*a, *b, *c, *d]) as i32 as i64 as u64,
            (16..=18, [a, b, c, d, e, f, g, h]) => order.u64([*a, *b, *c, *d, *e, *f, *g, *h]),
            _ => u64::MAX,
        });
        if !matches!(e.field_type, 1 | 3 | 4 | 6 | 7 | 8 | 9 | 13 | 16 | 17 | 18) {
            return None;
        }
        Some(values.collect())
    }

    /// The values of a RATIONAL (type 5) `tag`, as libtiff reads them into floats.
    pub fn rationals(&self, tag: u16) -> Option<Vec<f32>> {
        let e = self.entry(tag)?;
        if e.field_type != 5 {
            return None;
        }
        let order = self.order;
        let values = e.value.chunks_exact(8).map(|c| {
            let num = order.u32([c[0], c[1], c[2], c[3]]);
            let den = order.u32([c[4], c[5], c[6], c[7]]);
            if den == 0 { 0.0 } else { (f64::from(num) / f64::from(den)) as f32 }
        });
        Some(values.collect())
    }

    /// The first integer value of `tag`.
    pub fn int(&self, tag: u16) -> Option<u64> {
        self.ints(tag).and_then(|v| v.first().copied())
    }

    /// Whether `tag` is stored as BYTE or UNDEFINED (types 1, 7), which Pillow's `tag_v2` gives
    /// as `bytes`, so that its comparisons with integers fail.
    pub fn is_bytes(&self, tag: u16) -> bool {
        self.entry(tag).is_some_and(|e| matches!(e.field_type, 1 | 7))
    }

    /// The raw bytes of `tag`'s value (JPEGTables, XMP).
    pub fn bytes(&self, tag: u16) -> Option<&'a [u8]> {
        self.entry(tag).map(|e| e.value)
    }
}
