//! Autodesk FLI/FLC animations as Pillow's `FliImagePlugin` loads their first frame, then
//! `convert("RGB")`.
//!
//! A 128-byte little-endian header: file size, magic `0xAF11` (FLI) or `0xAF12` (FLC), frame
//! count, width, height, depth, flags (0 or 3), speed; bytes 20..22, 42..80 and 88..128 must be
//! zero. `_open` then reads the chunk at 128, skips it when it is a prefix chunk (`0xF100`,
//! its 32-bit size counted from 128), and in a frame chunk (`0xF1FA`) looks through the
//! sub-chunks for the first palette: type 4 (8-bit components) or 11 (6-bit components,
//! shifted left by 2). A palette chunk holds packets of a skip byte, a count byte (0 is 256)
//! and that many RGB triplets, over a greyscale default. Palette packets running past entry
//! 255 ("too much palette data") or components over 255 ("palette data out of range") are
//! `ValueError`s that end `Image.open`; a read short of what a field needs, no frames, or a
//! zero size makes `Image.open` try the next plugin ([`is_fli`]).
//!
//! Whatever a prefix chunk says, the first frame is decoded from offset 128, the 32-bit size
//! there setting how many bytes each read of `ImageFile.load` takes; the P image, zeroed
//! first, is what [`frame`] leaves in it, mapped through the palette. A file that ends before
//! the decoder is done is "image file is truncated (N bytes not processed)"; the decoder's
//! errors are Pillow's `OSError`s.

mod frame;

use super::Decoded;
use super::bytes::{le16, le32};
use super::open_checks::{Header, NeedMore, Reader, Verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};
use frame::{Canvas, Codec, Step};

const FORMAT: &str = "FLI";

/// The file header's length, and the offset of the first frame.
const HEADER: usize = 128;

/// A palette: 256 RGB entries.
type Palette = [[u8; 3]; 256];

/// What `FliImageFile._open` found.
struct Fli {
    width: usize,
    height: usize,
    palette: Palette,
}

/// Why `_open` did not return a [`Fli`].
enum Fail {
    /// A read past the end of an incomplete header.
    NeedMore,
    /// It raised an exception that makes `Image.open` try the next plugin (`SyntaxError`,
    /// `IndexError`, `struct.error`, `EOFError`), or left a zero size.
    NotFli,
    /// It raised a `ValueError`, which ends `Image.open`.
    Refused(&'static str),
}

impl From<NeedMore> for Fail {
    fn from(_: NeedMore) -> Self {
        Fail::NeedMore
    }
}

/// `_accept` and the reserved bytes `_open` requires to be zero, on the 128-byte header.
fn header_ok(s: &[u8]) -> bool {
    s.len() == HEADER
        && le16(s, 4).is_some_and(|m| m == 0xAF11 || m == 0xAF12)
        && le16(s, 14).is_some_and(|f| f == 0 || f == 3)
        && s[20..22].iter().chain(&s[42..80]).chain(&s[88..]).all(|&b| b == 0)
}

/// `FliImageFile._open`, up to its `seek(0)` and `ImageFile`'s size check.
fn open(r: &mut Reader<'_>) -> Result<Fli, Fail> {
    let s = r.read(HEADER)?;
    if !header_ok(s) {
        return Err(Fail::NotFli);
    }
    let field = |at| le16(s, at).map_or(0, usize::from);
    let (frames, width, height) = (field(6), field(8), field(10));
    let mut palette: Palette = std::array::from_fn(|i| [i as u8; 3]);
    let mut s = r.read(16)?;
    if le16(s, 4) == Some(0xF100) {
        let skip = le32(s, 0).ok_or(Fail::NotFli)?;
        r.pos = HEADER.saturating_add(skip as usize);
        s = r.read(16)?;
    }
    if le16(s, 4).ok_or(Fail::NotFli)? == 0xF1FA {
        let subchunks = le16(s, 6).ok_or(Fail::NotFli)?;
        let mut chunk_size: Option<u32> = None;
        for _ in 0..subchunks {
            if let Some(size) = chunk_size {
                // A relative seek of `size - 6`: the position is past 150, so never negative.
                r.pos = (r.pos.saturating_add(size as usize)).saturating_sub(6);
            }
            let c = r.read(6)?;
            let kind = le16(c, 4).ok_or(Fail::NotFli)?;
            if kind == 4 || kind == 11 {
                read_palette(r, &mut palette, if kind == 11 { 2 } else { 0 })?;
                break;
            }
            let size = le32(c, 0).ok_or(Fail::NotFli)?;
            if size == 0 {
                break;
            }
            chunk_size = Some(size);
        }
    }
    // `seek(0)` raises `EOFError` for no frames; `ImageFile` wants a positive size.
    if frames == 0 || width == 0 || height == 0 {
        return Err(Fail::NotFli);
    }
    Ok(Fli { width, height, palette })
}

/// `FliImageFile._palette`: packets of a skip, a count and `count` RGB triplets, each
/// component shifted left by `shift`.
fn read_palette(r: &mut Reader<'_>, palette: &mut Palette, shift: u32) -> Result<(), Fail> {
    let packets = le16(r.read(2)?, 0).ok_or(Fail::NotFli)?;
    let mut i = 0usize;
    for _ in 0..packets {
        let s = r.read(2)?;
        let (&skip, &count) = (s.first().ok_or(Fail::NotFli)?, s.get(1).ok_or(Fail::NotFli)?);
        i += usize::from(skip);
        let n = if count == 0 { 256 } else { usize::from(count) };
        if i + n > 256 {
            return Err(Fail::Refused("too much palette data"));
        }
        for rgb in r.read(n * 3)?.chunks(3) {
            // A short triplet: `IndexError`.
            let &[red, green, blue] = rgb else { return Err(Fail::NotFli) };
            let [red, green, blue] = [red, green, blue].map(|c| u32::from(c) << shift);
            if red > 255 || green > 255 || blue > 255 {
                return Err(Fail::Refused("palette data out of range"));
            }
            palette[i] = [red as u8, green as u8, blue as u8];
            i += 1;
        }
    }
    Ok(())
}

/// `FliImageFile._open`'s verdict: `Yes` for a file it opens or refuses with a `ValueError`
/// (which [`decode`] returns), `No` where `Image.open` goes on to the next plugin.
pub(crate) fn is_fli(header: Header<'_>) -> Verdict {
    match open(&mut Reader::new(header)) {
        Ok(_) | Err(Fail::Refused(_)) => Verdict::Yes,
        Err(Fail::NotFli) => Verdict::No,
        Err(Fail::NeedMore) => Verdict::NeedMore,
    }
}

/// Decodes the first frame of an FLI/FLC file; the size is checked against `limits` before
/// any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let Fli { width, height, palette } = match open(&mut Reader::new(Header { bytes, complete: true })) {
        Ok(fli) => fli,
        Err(Fail::Refused(why)) => return Err(Error::malformed(FORMAT, why)),
        Err(Fail::NotFli | Fail::NeedMore) => return Err(Error::malformed(FORMAT, "not an FLI/FLC file")),
    };
    limits.check(width as u64, height as u64)?;
    let mut canvas = Canvas { width, height, pixels: vec![0; width * height] };
    load(bytes, &mut canvas)?;
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    for (px, &index) in rgb.chunks_exact_mut(3).zip(&canvas.pixels) {
        px.copy_from_slice(&palette[usize::from(index)]);
    }
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}

/// `ImageFile.load` on the tile at 128: reads of the frame's size appended to what the
/// decoder has not consumed, a decoder call after each, until it is done or fails; a read
/// that returns nothing (the end of the file, or a frame size of 0) is "image file is
/// truncated".
fn load(bytes: &[u8], canvas: &mut Canvas) -> Result<()> {
    let block = le32(bytes, HEADER).ok_or_else(|| Error::malformed(FORMAT, "missing frame size"))? as usize;
    let (mut start, mut end) = (HEADER, HEADER);
    loop {
        let read = block.min(bytes.len() - end);
        if read == 0 {
            let detail = format!("image file is truncated ({} bytes not processed)", end - start);
            return Err(Error::Truncated { format: FORMAT, detail });
        }
        end += read;
        match frame::decode(&bytes[start..end], canvas) {
            Ok(Step::Consumed(n)) => start += n,
            Ok(Step::Done) => return Ok(()),
            Err(codec) => {
                let what = match codec {
                    Codec::Overrun => "buffer overrun",
                    Codec::Broken => "broken data stream",
                    Codec::Unknown => "unrecognized data stream contents",
                };
                return Err(Error::malformed(FORMAT, format!("{what} when reading image file")));
            }
        }
    }
}
