//! X11 bitmaps (XBM) as Pillow's `XbmImagePlugin` and `XbmDecode.c` load them, then
//! `convert("RGB")`:
//! - the header is read 75 bytes a line at most (`readline(75)`, right-stripped): block
//!   comments and one blank line are skipped, `#define ` lines give `width`, `height` (the
//!   last word, a decimal integer), and the first other line must end with `_bits[] = {`; the
//!   data start after it;
//! - each byte of data is the two characters after an `x` read as hex digits (any other
//!   character counts as 0), `ceil(width / 8)` bytes a row, least significant bit first; a set
//!   bit is white (255), as Pillow's mode `1` from rawmode `1;R`;
//! - data that ends before the last row is "image file is truncated".

use super::Decoded;
use super::open_checks::{Header, NeedMore, Reader, python_int, verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "XBM";

/// What the header gives: the size and where the data start.
pub(crate) struct XbmHeader {
    width: i64,
    height: i64,
    data_offset: usize,
}

/// `XbmImageFile._open` on `r`: `None` where it raises ("not a XBM file", or an `int` that does
/// not parse) or the size is not positive.
fn read_header(r: &mut Reader<'_>) -> std::result::Result<Option<XbmHeader>, NeedMore> {
    let (mut width, mut height, mut offset) = (None, None, None);
    let (mut starting, mut in_block_comment) = (true, false);
    loop {
        let line = r.readline_max(75)?;
        if line.is_empty() {
            break;
        }
        let line = &line[..line.iter().rposition(|b| !is_space(b)).map_or(0, |i| i + 1)];
        if in_block_comment {
            in_block_comment = !line.ends_with(b"*/");
            continue;
        }
        if line.starts_with(b"/*") {
            in_block_comment = !line.ends_with(b"*/");
            continue;
        }
        if starting && line.is_empty() {
            starting = false;
            continue;
        }
        if !line.starts_with(b"#define ") {
            if line.ends_with(b"_bits[] = {") {
                offset = Some(r.pos);
            }
            break;
        }
        let Some(value) = line.split(is_space).rfind(|w| !w.is_empty()).and_then(python_int) else {
            return Ok(None);
        };
        let contains = |needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
        if contains(b"width ") {
            width = Some(value);
        } else if contains(b"height ") {
            height = Some(value);
        }
    }
    Ok(match (width, height, offset) {
        (Some(width), Some(height), Some(data_offset)) if width > 0 && height > 0 => {
            Some(XbmHeader { width, height, data_offset })
        }
        _ => None,
    })
}

/// `XbmImageFile._open` as a header check: the file is XBM when its header parses.
pub(crate) fn is_xbm(header: Header<'_>) -> super::open_checks::Verdict {
    verdict(|| Ok(read_header(&mut Reader::new(header))?.is_some()))
}

/// Decodes an XBM file; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let header = match read_header(&mut Reader::new(Header { bytes, complete: true })) {
        Ok(Some(header)) => header,
        _ => return Err(Error::malformed(FORMAT, "not a XBM file")),
    };
    limits.check(header.width as u64, header.height as u64)?;
    let (width, height) = (header.width as usize, header.height as usize);
    let row_bytes = width.div_ceil(8);
    let packed = hex_bytes(bytes.get(header.data_offset..).unwrap_or(&[]), row_bytes * height)?;
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (row, out) in packed.chunks_exact(row_bytes).zip(rgb.chunks_exact_mut(width * 3)) {
        for (x, px) in out.chunks_exact_mut(3).enumerate() {
            let set = row.get(x / 8).is_some_and(|b| b & (1 << (x % 8)) != 0);
            px.fill(if set { 255 } else { 0 });
        }
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}

/// `ImagingXbmDecode`: `count` bytes, each from the two characters after the next `x`.
fn hex_bytes(data: &[u8], count: usize) -> Result<Vec<u8>> {
    let hex = |c: u8| match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => 0,
    };
    let mut out = Vec::with_capacity(count);
    let mut pos = 0;
    while out.len() < count {
        let Some(x) = data.get(pos..).and_then(|rest| rest.iter().position(|&b| b == b'x')) else {
            return Err(truncated());
        };
        let at = pos + x;
        let (Some(&hi), Some(&lo)) = (data.get(at + 1), data.get(at + 2)) else { return Err(truncated()) };
        out.push((hex(hi) << 4) + hex(lo));
        pos = at + 3;
    }
    Ok(out)
}

/// Python's `bytes.isspace` set, which `rstrip()` and `split()` use.
fn is_space(b: &u8) -> bool {
    b" \t\n\r\x0b\x0c".contains(b)
}

fn truncated() -> Error {
    Error::Truncated { format: FORMAT, detail: "image file is truncated".into() }
}
