//! DCX (multi-page PCX) as Pillow's `DcxImagePlugin` loads it: a table of up to 1024
//! little-endian page offsets after the magic, ended by a zero; the first page is a PCX image
//! at its offset ([`pcx`](super::pcx)). A table with no page is not DCX.

use super::Decoded;
use super::pcx;
use crate::{Error, Limits, Result};

/// Decodes the first page; its size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let first = bytes.get(4..8).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    if first == 0 {
        return Err(Error::malformed("DCX", "no pages"));
    }
    pcx::decode_at(bytes, first as usize, limits)
}
