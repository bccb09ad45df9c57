//! Apple icon files (`.icns`) as Pillow's `IcnsImagePlugin` reads them, then `convert("RGB")`.
//!
//! After the 8-byte header (`icns` and the declared file size, big-endian) come blocks: a
//! 4-byte code and a big-endian length that counts the block's own 8 header bytes. They are
//! walked while the position is below the declared size, and the last block of a code is the
//! one read. A length of 0, or a block header cut short by the end of the file, makes `_open`
//! fail, so the file is not ICNS and `Image.open` goes on. A length below 8 steps back into the
//! header just read, as the plugin's relative seek does.
//!
//! The image is the largest size present, comparing (width, height, scale) in that order; a
//! size is present when any of its codes is. Every code of that size present is read, in the
//! plugin's order, and any failure fails the file:
//! - `ic07` to `ic14` and `icp4` to `icp6` hold a PNG or a JPEG 2000 codestream or JP2 file,
//!   decoded as those formats are. The plugin hands the PNG reader the file itself from the
//!   block's start, so a PNG is read to the end of the file; a JPEG 2000 image gets exactly the
//!   block's bytes (the rest of the file for a length below 8). No orientation is applied,
//!   since an icon file carries no EXIF.
//! - `is32`, `il32`, `ih32` and `it32` (the last after 4 zero bytes) hold RGB: interleaved
//!   when the block is exactly 3 bytes per pixel, else 3 planes of a PackBits-like code (a
//!   control byte of 0x80 or more repeats the next byte `control - 125` times, a smaller one
//!   copies `control + 1` bytes). The planes run on from one to the next, with no bound at
//!   the block's end. A plane that overshoots its pixel count, or that the file ends inside,
//!   is an error.
//! - `s8mk`, `l8mk`, `h8mk` and `t8mk` hold 8-bit alpha masks. `convert("RGB")` drops the
//!   alpha, so a mask is only checked for length.
//!
//! An embedded PNG or JPEG 2000 image is the image when present. It must measure one of the
//! file's sizes divided by an integer (`IcnsImageFile`'s size setter), else the file is
//! refused. Otherwise the RGB planes are the image: a size with only a mask fails.

use super::Decoded;
use super::bytes::be32;
use super::open_checks::{Header, NeedMore, Reader, Verdict, verdict};
use super::{jpeg2000, png};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "ICNS";

/// What a block of a size holds, naming the plugin's reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// `read_png_or_jpeg2000`.
    Embedded,
    /// `read_32`.
    Rgb,
    /// `read_32t`: `read_32` after 4 zero bytes.
    RgbAfterZeros,
    /// `read_mk`.
    Mask,
}

/// One of the plugin's icon sizes and the codes of its blocks, in the plugin's order.
struct IconSize {
    width: u32,
    height: u32,
    scale: u32,
    codes: &'static [(&'static [u8; 4], Part)],
}

impl IconSize {
    /// The size in pixels.
    fn pixels(&self) -> (u32, u32) {
        (self.width * self.scale, self.height * self.scale)
    }

    fn key(&self) -> (u32, u32, u32) {
        (self.width, self.height, self.scale)
    }
}

/// `IcnsFile.SIZES`.
const SIZES: &[IconSize] = &[
    IconSize { width: 512, height: 512, scale: 2, codes: &[(b"ic10", Part::Embedded)] },
    IconSize { width: 512, height: 512, scale: 1, codes: &[(b"ic09", Part::Embedded)] },
    IconSize { width: 256, height: 256, scale: 2, codes: &[(b"ic14", Part::Embedded)] },
    IconSize { width: 256, height: 256, scale: 1, codes: &[(b"ic08", Part::Embedded)] },
    IconSize { width: 128, height: 128, scale: 2, codes: &[(b"ic13", Part::Embedded)] },
    IconSize {
        width: 128,
        height: 128,
        scale: 1,
        codes: &[(b"ic07", Part::Embedded), (b"it32", Part::RgbAfterZeros), (b"t8mk", Part::Mask)],
    },
    IconSize { width: 64, height: 64, scale: 1, codes: &[(b"icp6", Part::Embedded)] },
    IconSize { width: 32, height: 32, scale: 2, codes: &[(b"ic12", Part::Embedded)] },
    IconSize { width: 48, height: 48, scale: 1, codes: &[(b"ih32", Part::Rgb), (b"h8mk", Part::Mask)] },
    IconSize {
        width: 32,
        height: 32,
        scale: 1,
        codes: &[(b"icp5", Part::Embedded), (b"il32", Part::Rgb), (b"l8mk", Part::Mask)],
    },
    IconSize { width: 16, height: 16, scale: 2, codes: &[(b"ic11", Part::Embedded)] },
    IconSize {
        width: 16,
        height: 16,
        scale: 1,
        codes: &[(b"icp4", Part::Embedded), (b"is32", Part::Rgb), (b"s8mk", Part::Mask)],
    },
];

/// A block's data: where it starts and its length (the header's less 8, so from -7 up).
#[derive(Debug, Clone, Copy)]
struct Block {
    start: usize,
    length: i64,
}

/// The blocks of the codes in [`SIZES`], the last of each code.
struct Directory {
    blocks: Vec<([u8; 4], Block)>,
}

impl Directory {
    /// `IcnsFile.__init__`'s walk; `None` where it raises (a block length of 0, a header cut
    /// short).
    fn walk(r: &mut Reader<'_>) -> Result<Option<Directory>, NeedMore> {
        let Some(declared) = be32(r.read(8)?, 4) else { return Ok(None) };
        let mut blocks: Vec<([u8; 4], Block)> = Vec::new();
        let mut at = 8u64;
        while at < u64::from(declared) {
            // `at` is below the declared u32 size, so it fits a usize.
            r.pos = at as usize;
            let head = r.read(8)?;
            let (Some(code), Some(size)) = (head.first_chunk::<4>(), be32(head, 4)) else { return Ok(None) };
            if size == 0 {
                return Ok(None);
            }
            at += 8;
            let block = Block { start: at as usize, length: i64::from(size) - 8 };
            if SIZES.iter().any(|s| s.codes.iter().any(|(c, _)| *c == code)) {
                blocks.retain(|(c, _)| c != code);
                blocks.push((*code, block));
            }
            // A size of at least 1 moves on by at least 1 byte.
            at = at + u64::from(size) - 8;
        }
        Ok(Some(Directory { blocks }))
    }

    fn get(&self, code: &[u8; 4]) -> Option<Block> {
        self.blocks.iter().find(|(c, _)| c == code).map(|(_, b)| *b)
    }

    /// The sizes with any block present (`itersizes`), in the plugin's order.
    fn sizes(&self) -> impl Iterator<Item = &'static IconSize> + '_ {
        SIZES.iter().filter(|s| s.codes.iter().any(|(code, _)| self.get(code).is_some()))
    }

    /// `bestsize`: the largest size present.
    fn best(&self) -> Option<&'static IconSize> {
        self.sizes().max_by_key(|s| s.key())
    }
}

/// `IcnsImageFile._open`'s verdict: `No` where the block walk raises or no size is present
/// ("No 32bit icon resources found"); `Image.open` then goes on to the next plugin.
pub(crate) fn is_icns(header: Header<'_>) -> Verdict {
    verdict(|| Ok(Directory::walk(&mut Reader::new(header))?.is_some_and(|d| d.best().is_some())))
}

/// Decodes an icon file's largest image; the size is checked against `limits` before any
/// pixel buffer exists (an embedded image's own size by its decoder).
pub(crate) fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let directory = Directory::walk(&mut Reader::new(Header { bytes, complete: true }))
        .ok()
        .flatten()
        .ok_or_else(|| Error::malformed(FORMAT, "not an icns file (a block header is cut short or empty)"))?;
    let best = directory.best().ok_or_else(|| Error::malformed(FORMAT, "No 32bit icon resources found"))?;
    let (width, height) = best.pixels();
    limits.check(width.into(), height.into())?;
    let pixels = width as usize * height as usize;
    let (mut embedded, mut planes) = (None, None);
    for (code, part) in best.codes {
        let Some(block) = directory.get(code) else { continue };
        let name = String::from_utf8_lossy(*code);
        match part {
            Part::Embedded => embedded = Some(read_embedded(bytes, block, limits).map_err(|e| within(&name, e))?),
            Part::Rgb => planes = Some(read_rgb(bytes, block.start, block.length, pixels, &name)?),
            Part::RgbAfterZeros => {
                if bytes.get(block.start..block.start.saturating_add(4)) != Some(&[0; 4]) {
                    return Err(Error::malformed(FORMAT, format!("{name}: Unknown signature, expecting 0x00000000")));
                }
                planes = Some(read_rgb(bytes, block.start + 4, block.length - 4, pixels, &name)?);
            }
            Part::Mask => {
                if rest(bytes, block.start).len() < pixels {
                    return Err(short(&name));
                }
            }
        }
    }
    let image = match (embedded, planes) {
        (Some(image), _) => {
            let size = (image.width(), image.height());
            if !directory.sizes().any(|s| allows(s.pixels(), size)) {
                return Err(Error::malformed(
                    FORMAT,
                    format!("a {}x{} embedded image: not one of the allowed sizes of this image", size.0, size.1),
                ));
            }
            image
        }
        (None, Some(rgb)) => RgbImage::from_parts(width, height, rgb),
        (None, None) => {
            return Err(Error::malformed(FORMAT, format!("the {width}x{height} icon has a mask and no RGB data")));
        }
    };
    Ok(Decoded { image, orientation: Orientation::Normal })
}

/// The file from `at` on (empty past its end), as a read after `seek(at)` sees it.
fn rest(bytes: &[u8], at: usize) -> &[u8] {
    bytes.get(at..).unwrap_or(&[])
}

fn short(code: &str) -> Error {
    Error::Truncated { format: FORMAT, detail: format!("{code}: not enough image data") }
}

/// `IcnsImageFile`'s size setter: `(w, h)` is allowed by a size of `(sw, sh)` pixels when
/// `sh / h == sw // w` (an exact integer quotient for sizes this small).
fn allows((sw, sh): (u32, u32), (w, h): (u32, u32)) -> bool {
    w != 0 && h != 0 && sh % h == 0 && sh / h == sw / w
}

/// `read_png_or_jpeg2000`: the block's image as RGB, as `convert("RGB")` gives it.
fn read_embedded(bytes: &[u8], block: Block, limits: &Limits) -> Result<RgbImage> {
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
    const JP2: &[u8] = b"\0\0\0\x0cjP  \r\n\x87\n";
    let data = rest(bytes, block.start);
    let signature = &data[..data.len().min(12)];
    if signature.starts_with(PNG) {
        return Ok(png::decode(data, limits)?.image);
    }
    if signature.starts_with(b"\xff\x4f\xff\x51") || signature.starts_with(b"\r\n\x87\n") || signature == JP2 {
        let length = usize::try_from(block.length).unwrap_or(usize::MAX);
        return Ok(jpeg2000::decode(&data[..data.len().min(length)], limits)?.image);
    }
    Err(Error::unsupported(FORMAT, "Unsupported icon subimage format"))
}

/// An embedded image's error, as the icon file's: its format and its block named.
fn within(code: &str, error: Error) -> Error {
    match error {
        Error::Malformed { format, detail } => Error::malformed(FORMAT, format!("{code}: {format} image: {detail}")),
        Error::Truncated { format, detail } => {
            Error::Truncated { format: FORMAT, detail: format!("{code}: {format} image: {detail}") }
        }
        Error::Unsupported { format, detail } => {
            Error::unsupported(FORMAT, format!("{code}: {format} image: {detail}"))
        }
        Error::UnsupportedFormat { format } => Error::unsupported(FORMAT, format!("{code}: a {format} image")),
        other => other,
    }
}

/// `read_32`: `pixels` RGB pixels from `start`, interleaved when `length` is exactly their
/// size, else run-length coded planes.
fn read_rgb(bytes: &[u8], start: usize, length: i64, pixels: usize, code: &str) -> Result<Vec<u8>> {
    let data = rest(bytes, start);
    if u64::try_from(length).ok() == Some(pixels as u64 * 3) {
        return data.get(..pixels * 3).map(<[u8]>::to_vec).ok_or_else(|| short(code));
    }
    let mut rgb = vec![0; pixels * 3];
    let mut pos = 0;
    for band in 0..3 {
        let mut plane = Vec::with_capacity(pixels);
        let mut left = pixels as i64;
        while left > 0 {
            let Some(&control) = data.get(pos) else { break };
            pos += 1;
            let run = if control & 0x80 != 0 {
                let run = usize::from(control) - 125;
                if let Some(&value) = data.get(pos) {
                    pos += 1;
                    plane.resize(plane.len() + run, value);
                }
                run
            } else {
                let run = usize::from(control) + 1;
                let end = data.len().min(pos + run);
                plane.extend_from_slice(&data[pos..end]);
                pos = end;
                run
            };
            left -= run as i64;
        }
        if left != 0 {
            return Err(Error::malformed(FORMAT, format!("{code}: Error reading channel [{left} left]")));
        }
        if plane.len() < pixels {
            return Err(short(code));
        }
        for (pixel, &value) in rgb.chunks_exact_mut(3).zip(&plane) {
            pixel[band] = value;
        }
    }
    Ok(rgb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_embedded_size_must_divide_a_present_size_evenly() {
        assert!(allows((1024, 1024), (1024, 1024)));
        assert!(allows((1024, 1024), (512, 512)));
        assert!(!allows((1024, 1024), (1000, 1000)));
        assert!(!allows((128, 128), (256, 256)));
        assert!(!allows((128, 128), (64, 32)));
    }

    #[test]
    fn runs_repeat_and_copy_and_a_plane_may_not_overshoot() {
        // 4 pixels: plane R as a repeat of 4, G as a copy of 4, B as a repeat of 3 and a copy.
        let data = [0x81, 7, 3, 1, 2, 3, 4, 0x80, 9, 0, 5];
        let rgb = read_rgb(&data, 0, data.len() as i64, 4, "is32").unwrap();
        assert_eq!(rgb, [7, 1, 9, 7, 2, 9, 7, 3, 9, 7, 4, 5]);
        assert!(matches!(read_rgb(&[0x82, 7], 0, 2, 4, "is32"), Err(Error::Malformed { .. })));
        assert!(matches!(read_rgb(&[3, 1, 2], 0, 3, 4, "is32"), Err(Error::Truncated { .. })));
        // Exactly 3 bytes per pixel is interleaved RGB.
        assert_eq!(read_rgb(&[1, 2, 3], 0, 3, 1, "is32").unwrap(), [1, 2, 3]);
    }
}
