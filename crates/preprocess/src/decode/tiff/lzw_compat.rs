//! Old-style LZW (libtiff's `LZWDecodeCompat`, tif_lzw.c): codes LSB first, starting at 9
//! bits, one bit wider once the table's next free entry passes the widest code (no early
//! change), 12 bits at most, read from libtiff's 5119-entry table. libtiff takes an image's
//! LZW data as old-style when its first segment begins with a zero byte and an odd one, and
//! then decodes every segment of it this way.
//!
//! Each segment must begin with a clear code; a code that names an entry not yet defined, a
//! table past its 5119 entries, or data that ends before the segment is full is libtiff's
//! failure (Pillow refuses the file): [`Error::Malformed`]. A string longer than the room left
//! gives its first bytes, as libtiff's restart logic does for the last string of a segment.

use crate::{Error, Result};

const FORMAT: &str = "TIFF";
const CLEAR: usize = 256;
const EOI: usize = 257;
const FIRST: usize = 258;
const BITS_MIN: u32 = 9;
const BITS_MAX: u32 = 12;
/// libtiff's `CSIZE`: `MAXCODE(BITS_MAX) + 1024`.
const TABLE: usize = (1 << BITS_MAX) - 1 + 1024;

/// Whether a segment begins as libtiff's `LZWPreDecode` recognises old-style codes.
pub fn is_old_style(data: &[u8]) -> bool {
    matches!(data, [0, second, ..] if second & 1 == 1)
}

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    /// The previous entry of the string (`None` for the 256 single bytes).
    next: Option<u16>,
    length: u16,
    value: u8,
    first: u8,
}

fn corrupted(detail: &str) -> Error {
    Error::malformed(FORMAT, format!("old-style LZW: {detail}"))
}

/// Decodes one segment into exactly `out.len()` bytes.
pub fn decode(data: &[u8], out: &mut [u8]) -> Result<()> {
    let mut table = vec![Entry::default(); TABLE];
    for (code, entry) in table.iter_mut().enumerate().take(CLEAR) {
        *entry = Entry { next: None, length: 1, value: code as u8, first: code as u8 };
    }
    let (mut nbits, mut mask) = (BITS_MIN, (1usize << BITS_MIN) - 1);
    // libtiff starts with the free entry before the table and the widest code one short.
    let (mut free, mut max_code): (isize, usize) = (-1, mask - 1);
    let mut old = 0usize;
    let (mut bits_left, mut next_data, mut next_bits, mut at) = (data.len() as u64 * 8, 0u64, 0u32, 0usize);
    let mut next_code = |nbits: u32, mask: usize| -> usize {
        if bits_left < u64::from(nbits) {
            return EOI;
        }
        for _ in 0..2 {
            next_data |= u64::from(data.get(at).copied().unwrap_or(0)) << next_bits;
            at += 1;
            next_bits += 8;
            if next_bits >= nbits {
                break;
            }
        }
        let code = (next_data as usize) & mask;
        next_data >>= nbits;
        next_bits -= nbits;
        bits_left -= u64::from(nbits);
        code
    };
    let mut o = 0usize;
    while o < out.len() {
        let mut code = next_code(nbits, mask);
        if code == EOI {
            break;
        }
        if code == CLEAR {
            while code == CLEAR {
                free = FIRST as isize;
                table[FIRST..].fill(Entry::default());
                nbits = BITS_MIN;
                mask = (1 << BITS_MIN) - 1;
                max_code = mask;
                code = next_code(nbits, mask);
            }
            if code == EOI {
                break;
            }
            if code > CLEAR {
                return Err(corrupted("a clear code followed by a string code"));
            }
            out[o] = code as u8;
            o += 1;
            old = code;
            continue;
        }
        let slot = usize::try_from(free).ok().filter(|&f| f < TABLE).ok_or_else(|| corrupted("code table overrun"))?;
        let previous = table[old];
        let value = if code < slot { table[code].first } else { previous.first };
        table[slot] =
            Entry { next: Some(old as u16), length: previous.length.wrapping_add(1), value, first: previous.first };
        free += 1;
        if free as usize > max_code {
            nbits = (nbits + 1).min(BITS_MAX);
            mask = (1 << nbits) - 1;
            max_code = mask;
        }
        old = code;
        if code < CLEAR {
            out[o] = code as u8;
            o += 1;
            continue;
        }
        let length = usize::from(table[code].length);
        if length == 0 {
            return Err(corrupted("a code not in the table"));
        }
        // The string, written back to front from its last entry; only its first bytes when
        // the segment has less room.
        let mut entry = Some(code as u16);
        let mut skip = length.saturating_sub(out.len() - o);
        let len = length - skip;
        let mut end = o + len;
        while let Some(e) = entry {
            let e = table[usize::from(e)];
            if skip > 0 {
                skip -= 1;
            } else if end > o {
                end -= 1;
                out[end] = e.value;
            } else {
                break;
            }
            entry = e.next;
        }
        o += len;
    }
    if o < out.len() {
        return Err(super::compression::short("old-style LZW", o, out.len()));
    }
    Ok(())
}
