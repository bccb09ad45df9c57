//! GIF, first frame, as Pillow's `GifImagePlugin` loads it (default strategy
//! `RGB_AFTER_FIRST`: frame 0 stays mode `P`, or `L` without a palette), then
//! `convert("RGB")`:
//! - the canvas is the logical screen, grown to cover the first frame if it sticks out;
//! - it starts as the frame's transparent index when it has one, else index 0;
//! - the frame's indices are pasted at its offset (transparent ones included);
//! - RGB is the lookup in the local palette, else the global one (black past its end), or the
//!   index as gray when the file has no palette. Transparency is ignored.

use super::Decoded;
use crate::{Error, Limits, Orientation, Result, RgbImage};
use gif::{ColorOutput, DecodeOptions, DecodingError, MemoryLimit};
use std::io::Cursor;

const FORMAT: &str = "GIF";

/// Decodes the first frame; the screen and frame sizes are checked against `limits` before
/// any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let mut options = DecodeOptions::new();
    options.set_color_output(ColorOutput::Indexed);
    options.set_memory_limit(MemoryLimit::Unlimited);
    // Pillow raises "image file is truncated" when the data stops before the LZW end code.
    options.check_lzw_end_code(true);
    // The `gif` crate refuses a frame without any colour table; Pillow reads its indices as
    // gray. A stand-in global table (never looked up) lets the crate decode the indices.
    let has_global = bytes.get(10).is_some_and(|flags| flags & 0x80 != 0);
    let with_table;
    let stream = if has_global || bytes.len() < 13 {
        bytes
    } else {
        with_table = [&bytes[..10], &[(bytes[10] & 0x78) | 0x80], &bytes[11..13], &[0; 6], &bytes[13..]].concat();
        &with_table[..]
    };
    let mut decoder = options.read_info(Cursor::new(stream)).map_err(classify)?;
    let (screen_w, screen_h) = (u32::from(decoder.width()), u32::from(decoder.height()));
    let global = if has_global { decoder.global_palette().map(<[u8]>::to_vec) } else { None };
    let frame = decoder.next_frame_info().map_err(classify)?.ok_or_else(|| Error::malformed(FORMAT, "no image"))?;
    let (left, top) = (u32::from(frame.left), u32::from(frame.top));
    let (fw, fh) = (u32::from(frame.width), u32::from(frame.height));
    let width = screen_w.max(left + fw);
    let height = screen_h.max(top + fh);
    limits.check(width.into(), height.into())?;
    limits.check(fw.max(1).into(), fh.max(1).into())?;
    let transparent = frame.transparent;
    let palette = frame.palette.clone().or(global);
    let mut indices = vec![0u8; decoder.buffer_size()];
    decoder.read_into_buffer(&mut indices).map_err(classify)?;
    if !first_image_terminated(bytes) {
        return Err(Error::Truncated { format: FORMAT, detail: "first image data ends before its terminator".into() });
    }

    let (w, h) = (width as usize, height as usize);
    let mut canvas = vec![transparent.unwrap_or(0); w * h];
    let (left, top, fw) = (left as usize, top as usize, fw as usize);
    if fw > 0 {
        for (y, row) in indices.chunks_exact(fw).enumerate() {
            let start = (top + y) * w + left;
            canvas[start..start + fw].copy_from_slice(row);
        }
    }
    let mut rgb = Vec::with_capacity(w * h * 3);
    for &i in &canvas {
        let entry = match &palette {
            Some(p) => p.get(usize::from(i) * 3..usize::from(i) * 3 + 3).map_or([0; 3], |c| [c[0], c[1], c[2]]),
            None => [i; 3],
        };
        rgb.extend_from_slice(&entry);
    }
    Ok(Decoded { image: RgbImage::from_parts(width, height, rgb), orientation: Orientation::Normal })
}

fn classify(error: DecodingError) -> Error {
    match error {
        DecodingError::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Error::Truncated { format: FORMAT, detail: e.to_string() }
        }
        other => Error::malformed(FORMAT, other),
    }
}

/// Whether the first image's data sub-blocks end with their zero-length terminator inside
/// `bytes`: Pillow's loader raises "image file is truncated" otherwise, even when the pixels
/// decoded.
fn first_image_terminated(bytes: &[u8]) -> bool {
    let table = |flags: u8| if flags & 0x80 != 0 { 3usize << ((flags & 7) + 1) } else { 0 };
    let Some(&screen_flags) = bytes.get(10) else { return false };
    let mut pos = 13 + table(screen_flags);
    // Skips sub-blocks from `pos`; the position after the terminator, if present.
    let skip_blocks = |mut pos: usize| loop {
        let len = usize::from(*bytes.get(pos)?);
        pos += 1 + len;
        if len == 0 {
            return Some(pos);
        }
    };
    loop {
        match bytes.get(pos) {
            Some(0x21) => match skip_blocks(pos + 2) {
                Some(next) => pos = next,
                None => return false,
            },
            Some(0x2C) => {
                let Some(&flags) = bytes.get(pos + 9) else { return false };
                // Descriptor (10 bytes), local table, LZW minimum code size, data sub-blocks.
                return skip_blocks(pos + 10 + table(flags) + 1).is_some();
            }
            _ => return false,
        }
    }
}
