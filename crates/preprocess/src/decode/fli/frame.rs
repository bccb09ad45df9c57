//! One call of Pillow's FLI decoder (`FliDecode.c`) on the bytes read so far.
//!
//! The buffer starts at a frame chunk: its 32-bit size, the magic `0xF1FA`, the sub-chunk count
//! and 8 reserved bytes. The decoder waits (consumes nothing) until the buffer holds the
//! frame's size, less one pad byte when the buffer's length is odd, then runs the sub-chunks
//! in order on the image, which keeps what earlier calls (and nothing else: it starts zeroed)
//! wrote to it:
//! - 4, 11 (palettes, read by the plugin at open) and 18 (postage stamp): skipped;
//! - 7, SS2 (word delta): a line count, then per line packet words; a word with bit 15 and
//!   bit 14 set skips `65536 - word` lines, bit 15 alone stores its low byte in the line's
//!   last pixel; then packets of a skip byte and a count: positive, that many pixel pairs
//!   copied; negative, one pair repeated `-count` times;
//! - 12, LC (byte delta): first line and line count, then per line a packet count byte and
//!   packets of a skip byte and a count: positive, that many pixels copied; negative, one pixel
//!   repeated;
//! - 13, BLACK: every pixel 0;
//! - 15, BRUN: per line an ignored byte, then packets until the line is full: a negative count
//!   copies `-count` pixels, a positive one repeats one pixel (a zero count writes nothing);
//! - 16, COPY: the raw pixels, row after row; when the buffer is too short the decoder returns
//!   the offset of this chunk as consumed, so the next call sees the chunk's header where a
//!   frame's should be;
//! - any other type: "unrecognized data stream contents".
//!
//! Every read is bounded by the end of the buffer, not of the chunk ("buffer overrun" past
//! it), and so is each chunk's size, which must not be zero ("broken data stream"). A packet
//! that would write past the end of its line, a line skip past the last line, or SS2/LC/BRUN
//! data that stops short of its declared lines, is "buffer overrun".

use super::super::bytes::{le16, le32};

/// The decoder's error codes (`IMAGING_CODEC_*`), which Pillow turns into `OSError`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Codec {
    /// `IMAGING_CODEC_OVERRUN`: "buffer overrun".
    Overrun,
    /// `IMAGING_CODEC_BROKEN`: "broken data stream" (a chunk of size 0).
    Broken,
    /// `IMAGING_CODEC_UNKNOWN`: "unrecognized data stream contents".
    Unknown,
}

/// What a call that did not fail returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// More bytes are needed; the first `n` of the buffer are consumed.
    Consumed(usize),
    /// The frame is decoded.
    Done,
}

/// The P image the frame is decoded into: one palette index per pixel, rows of `width`.
pub(super) struct Canvas {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u8>,
}

impl Canvas {
    /// Row `y`, which the callers keep below `height`.
    fn row(&mut self, y: usize) -> &mut [u8] {
        &mut self.pixels[y * self.width..][..self.width]
    }
}

/// `ERR_IF_DATA_OOB`: `chunk[at..at + n]` must lie within the buffer (`chunk` runs to its end).
fn need(chunk: &[u8], at: usize, n: usize) -> Result<(), Codec> {
    if at.saturating_add(n) > chunk.len() { Err(Codec::Overrun) } else { Ok(()) }
}

/// Decodes what of the frame at the start of `buf` the buffer allows, into `canvas`.
pub(super) fn decode(buf: &[u8], canvas: &mut Canvas) -> Result<Step, Codec> {
    let Some(framesize) = le32(buf, 0) else { return Ok(Step::Consumed(0)) };
    // One pad byte may be missing; C compares the length cast to `unsigned`.
    let padded = (buf.len() + buf.len() % 2) as u32;
    if padded < framesize {
        return Ok(Step::Consumed(0));
    }
    let (Some(magic), Some(chunks)) = (le16(buf, 4), le16(buf, 6)) else { return Err(Codec::Overrun) };
    if magic != 0xF1FA {
        return Err(Codec::Unknown);
    }
    let mut ptr = 16;
    for _ in 0..chunks {
        // Fewer than 10 bytes left (or the frame header's 16 not all there).
        let Some(chunk) = buf.get(ptr..).filter(|rest| rest.len() >= 10) else { return Err(Codec::Overrun) };
        match le16(chunk, 4) {
            Some(4 | 11 | 18) => {}
            Some(7) => ss2(chunk, canvas)?,
            Some(12) => lc(chunk, canvas)?,
            Some(13) => canvas.pixels.fill(0),
            Some(15) => brun(chunk, canvas)?,
            Some(16) => {
                if !copy(chunk, canvas)? {
                    return Ok(Step::Consumed(ptr));
                }
            }
            _ => return Err(Codec::Unknown),
        }
        let advance = le32(chunk, 0).ok_or(Codec::Overrun)? as usize;
        if advance == 0 {
            return Err(Codec::Broken);
        }
        if advance > chunk.len() {
            return Err(Codec::Overrun);
        }
        ptr += advance;
    }
    Ok(Step::Done)
}

/// The byte at `at`, which a `need` has checked.
fn byte(chunk: &[u8], at: usize) -> usize {
    usize::from(chunk[at])
}

/// SS2: word-oriented delta lines.
fn ss2(chunk: &[u8], canvas: &mut Canvas) -> Result<(), Codec> {
    let (width, height) = (canvas.width, canvas.height);
    let lines = le16(chunk, 6).ok_or(Codec::Overrun)?;
    let mut d = 8;
    let (mut l, mut y) = (0u16, 0usize);
    'lines: while l < lines && y < height {
        let mut row = y;
        need(chunk, d, 2)?;
        let mut packets = usize::from(le16(chunk, d).ok_or(Codec::Overrun)?);
        d += 2;
        while packets & 0x8000 != 0 {
            if packets & 0x4000 != 0 {
                y += 65536 - packets;
                if y >= height {
                    return Err(Codec::Overrun);
                }
                row = y;
            } else {
                canvas.row(row)[width - 1] = packets as u8;
            }
            need(chunk, d, 2)?;
            packets = usize::from(le16(chunk, d).ok_or(Codec::Overrun)?);
            d += 2;
        }
        let out = canvas.row(row);
        let mut x = 0;
        for _ in 0..packets {
            need(chunk, d, 2)?;
            x += byte(chunk, d);
            let count = byte(chunk, d + 1);
            if count >= 128 {
                need(chunk, d, 4)?;
                let pairs = 256 - count;
                if x + 2 * pairs > width {
                    break 'lines;
                }
                for pair in out[x..x + 2 * pairs].chunks_exact_mut(2) {
                    pair.copy_from_slice(&chunk[d + 2..d + 4]);
                }
                x += 2 * pairs;
                d += 4;
            } else {
                let n = 2 * count;
                if x + n > width {
                    break 'lines;
                }
                need(chunk, d, 2 + n)?;
                out[x..x + n].copy_from_slice(&chunk[d + 2..d + 2 + n]);
                d += 2 + n;
                x += n;
            }
        }
        l += 1;
        y += 1;
    }
    if l < lines { Err(Codec::Overrun) } else { Ok(()) }
}

/// LC: byte-oriented delta lines.
fn lc(chunk: &[u8], canvas: &mut Canvas) -> Result<(), Codec> {
    let (width, height) = (canvas.width, canvas.height);
    let mut y = usize::from(le16(chunk, 6).ok_or(Codec::Overrun)?);
    let ymax = y + usize::from(le16(chunk, 8).ok_or(Codec::Overrun)?);
    let mut d = 10;
    'lines: while y < ymax && y < height {
        let out = canvas.row(y);
        need(chunk, d, 1)?;
        let packets = chunk[d];
        d += 1;
        let mut x = 0;
        for _ in 0..packets {
            need(chunk, d, 2)?;
            x += byte(chunk, d);
            let count = byte(chunk, d + 1);
            if count & 0x80 != 0 {
                let n = 256 - count;
                if x + n > width {
                    break 'lines;
                }
                need(chunk, d, 3)?;
                out[x..x + n].fill(chunk[d + 2]);
                d += 3;
                x += n;
            } else {
                if x + count > width {
                    break 'lines;
                }
                need(chunk, d, 2 + count)?;
                out[x..x + count].copy_from_slice(&chunk[d + 2..d + 2 + count]);
                d += 2 + count;
                x += count;
            }
        }
        y += 1;
    }
    if y < ymax { Err(Codec::Overrun) } else { Ok(()) }
}

/// BRUN: byte run-length lines, every line filled.
fn brun(chunk: &[u8], canvas: &mut Canvas) -> Result<(), Codec> {
    let width = canvas.width;
    let mut d = 6;
    for y in 0..canvas.height {
        let out = canvas.row(y);
        // The line's packet count, which the decoder ignores.
        d += 1;
        let mut x = 0;
        while x < width {
            need(chunk, d, 2)?;
            let count = byte(chunk, d);
            if count & 0x80 != 0 {
                let n = 256 - count;
                if x + n > width {
                    break;
                }
                need(chunk, d, n + 1)?;
                out[x..x + n].copy_from_slice(&chunk[d + 1..d + 1 + n]);
                d += n + 1;
                x += n;
            } else {
                if x + count > width {
                    break;
                }
                out[x..x + count].fill(chunk[d + 1]);
                d += 2;
                x += count;
            }
        }
        if x != width {
            return Err(Codec::Overrun);
        }
    }
    Ok(())
}

/// COPY: the raw image; `false` (nothing written) when the buffer ends before it does.
fn copy(chunk: &[u8], canvas: &mut Canvas) -> Result<bool, Codec> {
    let size = canvas.width as u64 * canvas.height as u64;
    if size > i32::MAX as u64 {
        return Err(Codec::Overrun);
    }
    let Some(data) = chunk.get(6..6 + size as usize) else { return Ok(false) };
    canvas.pixels.copy_from_slice(data);
    Ok(true)
}
