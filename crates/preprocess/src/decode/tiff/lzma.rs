//! LZMA-compressed strips and tiles (`Compression` 34925): libtiff's `LZMADecode` reads each
//! segment as one `.xz` stream, whose block's filter chain is LZMA2, optionally after a delta
//! filter (what libtiff writes with a predictor-like `LZMAPreset`; liblzma undoes it). Decoded
//! here: the stream header, the first block's header, its LZMA2 data (`lzma-rs`), then the
//! delta filter; the index, footer and checks are not read, since the segment's size is known.

use super::compression::short;
use crate::{Error, Result};

const FORMAT: &str = "TIFF";
const MAGIC: &[u8] = &[0xFD, b'7', b'z', b'X', b'Z', 0];
const FILTER_DELTA: u64 = 0x03;
const FILTER_LZMA2: u64 = 0x21;

/// Exactly `out.len()` bytes of the segment's `.xz` stream, else an error. Decoding stops once
/// they are written, so a bomb never grows past the segment.
pub fn decode(data: &[u8], out: &mut [u8]) -> Result<()> {
    let (delta, lzma2) = block(data)?;
    let want = out.len();
    let mut sink = Bounded { out, written: 0 };
    let result = lzma_rs::lzma2_decompress(&mut &lzma2[..], &mut sink);
    let written = sink.written;
    match result {
        _ if written == want => {}
        Err(e) => return Err(malformed(format!("LZMA2: {e}"))),
        Ok(()) => return Err(short("LZMA", written, want)),
    }
    if let Some(distance) = delta {
        for i in distance..out.len() {
            out[i] = out[i].wrapping_add(out[i - distance]);
        }
    }
    Ok(())
}

/// The delta filter's distance, if the chain has one, and the first block's LZMA2 data.
fn block(data: &[u8]) -> Result<(Option<usize>, &[u8])> {
    if !data.starts_with(MAGIC) || data.len() < 13 {
        return Err(malformed("not an .xz stream".into()));
    }
    let start = 12;
    let header_len = (usize::from(data[start]) + 1) * 4;
    let header = data.get(start..start + header_len).ok_or_else(|| malformed("truncated block header".into()))?;
    let flags = header[1];
    let mut at = 2;
    for present in [flags & 0x40 != 0, flags & 0x80 != 0] {
        if present {
            varint(header, &mut at)?; // compressed or uncompressed size
        }
    }
    let mut delta = None;
    let filters = usize::from(flags & 3) + 1;
    for i in 0..filters {
        let id = varint(header, &mut at)?;
        let size = usize::try_from(varint(header, &mut at)?).map_err(|_| malformed("filter properties".into()))?;
        let props = header.get(at..at + size).ok_or_else(|| malformed("truncated filter properties".into()))?;
        at += size;
        match (id, i + 1 == filters, props) {
            (FILTER_DELTA, false, [d]) if delta.is_none() => delta = Some(usize::from(*d) + 1),
            (FILTER_LZMA2, true, [_]) => {}
            (id, ..) => {
                return Err(Error::unsupported(FORMAT, format!("LZMA filter chain with filter {id:#x} at {i}")));
            }
        }
    }
    Ok((delta, &data[start + header_len..]))
}

/// An `.xz` variable-length integer (7 bits a byte, little end first, at most 9 bytes).
fn varint(bytes: &[u8], at: &mut usize) -> Result<u64> {
    let mut value = 0u64;
    for shift in (0..63).step_by(7) {
        let byte = *bytes.get(*at).ok_or_else(|| malformed("truncated block header".into()))?;
        *at += 1;
        value |= u64::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(malformed("an integer of more than 9 bytes".into()))
}

fn malformed(detail: String) -> Error {
    Error::malformed(FORMAT, format!("LZMA: {detail}"))
}

/// A writer that takes `out.len()` bytes, then refuses more.
struct Bounded<'a> {
    out: &'a mut [u8],
    written: usize,
}

impl std::io::Write for Bounded<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.out.get_mut(self.written..).unwrap_or_default();
        if room.is_empty() && !buf.is_empty() {
            return Err(std::io::Error::other("more data than the segment holds"));
        }
        let n = buf.len().min(room.len());
        room[..n].copy_from_slice(&buf[..n]);
        self.written += n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
