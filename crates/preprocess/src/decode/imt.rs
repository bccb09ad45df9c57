//! IM Tools (IMT) images as Pillow's `ImtImagePlugin` loads them, then `convert("RGB")`: the
//! header ([`imt_header`], also the format's `_open` check) gives the size, and after its
//! `\x0c` come `width * height` gray bytes, rows top-down. Without the `\x0c` there is nothing
//! to load ("cannot load this image"); data that ends early is "image file is truncated".

use super::Decoded;
use super::open_checks::{Header, NeedMore, Reader, Verdict, python_int, verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "IMT";

/// `ImtImagePlugin._open`: `key value` lines (`[a-z]* [^ \r\n]*`, `*` starting a comment)
/// read 100 bytes at a time, up to a `\x0c`; the file is IMT when it names `pixel n8` and a
/// positive `width` and `height`.
pub(crate) fn is_imt(header: Header<'_>) -> Verdict {
    verdict(|| Ok(imt_header(header)?.is_some()))
}

/// What an IMT header gives: the size and where the pixels start (after the `\x0c`; `None`
/// without one, when Pillow has no tile to load).
pub(crate) struct ImtHeader {
    pub width: i64,
    pub height: i64,
    pub data_offset: Option<usize>,
}

/// `ImtImagePlugin._open`: the header when the file is IMT (mode `L`, a positive size).
pub(crate) fn imt_header(header: Header<'_>) -> Result<Option<ImtHeader>, NeedMore> {
    let mut r = Reader::new(header);
    let mut buffer = r.read(100)?.to_vec();
    if !buffer.contains(&b'\n') {
        return Ok(None);
    }
    let (mut width, mut height, mut mode_l, mut data_offset) = (0i64, 0i64, false, None);
    loop {
        let mut s = if buffer.is_empty() { r.read(1)?.to_vec() } else { vec![buffer.remove(0)] };
        if s.is_empty() {
            break;
        }
        if s == b"\x0c" {
            data_offset = Some(r.pos - buffer.len());
            break;
        }
        if !buffer.contains(&b'\n') {
            buffer.extend_from_slice(r.read(100)?);
        }
        match buffer.iter().position(|&b| b == b'\n') {
            Some(i) => {
                s.extend_from_slice(&buffer[..i]);
                buffer.drain(..=i);
            }
            None => s.append(&mut buffer),
        }
        if s.len() == 1 || s.len() > 100 {
            break;
        }
        if s[0] == b'*' {
            continue;
        }
        // `([a-z]*) ([^ \r\n]*)`, matched at the start.
        let key_len = s.iter().take_while(|b| b.is_ascii_lowercase()).count();
        if s.get(key_len) != Some(&b' ') {
            break;
        }
        let key = &s[..key_len];
        let value: Vec<u8> = s[key_len + 1..].iter().copied().take_while(|b| !b" \r\n".contains(b)).collect();
        match key {
            // Pillow's `int(v)` raises ValueError on anything else.
            b"width" => match python_int(&value) {
                Some(v) => width = v,
                None => return Ok(None),
            },
            b"height" => match python_int(&value) {
                Some(v) => height = v,
                None => return Ok(None),
            },
            b"pixel" if value == b"n8" => mode_l = true,
            _ => {}
        }
    }
    Ok((mode_l && width > 0 && height > 0).then_some(ImtHeader { width, height, data_offset }))
}

/// Decodes an IMT file; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let Ok(Some(header)) = imt_header(Header { bytes, complete: true }) else {
        return Err(Error::malformed(FORMAT, "not an IMT header"));
    };
    limits.check(header.width as u64, header.height as u64)?;
    let offset = header.data_offset.ok_or_else(|| Error::malformed(FORMAT, "cannot load this image"))?;
    let (width, height) = (header.width as usize, header.height as usize);
    let gray = bytes
        .get(offset..)
        .and_then(|rest| rest.get(..width * height))
        .ok_or_else(|| Error::Truncated { format: FORMAT, detail: "image file is truncated".into() })?;
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (&v, px) in gray.iter().zip(rgb.chunks_exact_mut(3)) {
        px.fill(v);
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}
