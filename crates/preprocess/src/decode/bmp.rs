//! BMP and bare DIB, as Pillow's `BmpImagePlugin` reads them (`BmpImageFile._bitmap`, the
//! `raw` decoder of libImaging/RawDecode.c with its unpackers, and the Python `BmpRleDecoder`),
//! then `convert("RGB")`:
//!
//! | bits | compression            | Pillow mode (raw mode)                                     |
//! |------|------------------------|------------------------------------------------------------|
//! | 1    | none                   | `P` (`P;1`), or `1` when the palette is black, white       |
//! | 4    | none / RLE4            | `P` (`P;4`), or `L` when the palette is the gray ramp      |
//! | 8    | none / RLE8            | `P` (`P`), or `1` / `L` for a black-white / gray palette   |
//! | 16   | none                   | `RGB` (`BGR;15`)                                           |
//! | 16   | bitfields 565 / 555    | `RGB` (`BGR;16` / `BGR;15`)                                |
//! | 24   | none / bitfields       | `RGB` (`BGR`)                                              |
//! | 32   | none / 8 bitfields     | `RGB` / `RGBA` (`BGRX`, `XBGR`, `BGXR`, `ABGR`, `RGBA`, ...) |
//!
//! Other depths, bitfield layouts and compressions are refused with Pillow's message
//! ("Unsupported BMP bitfields layout", ...). RGB is the palette lookup for `P` (entries past
//! the palette are black; more than 256 entries is an error, as in Pillow's `putpalette`), the
//! gray replicated for `1`/`L`, the colour channels for `RGB`/`RGBA` (alpha dropped). The RLE
//! decoder fills what the stream skips (deltas, early ends of line) with index 0, and the
//! stream must fill every row (Pillow's "not enough image data"). Raw pixel data that ends
//! early is "image file is truncated".

use super::Decoded;
use super::bytes::{le16, le32};
use crate::{Error, Limits, Orientation, Result, RgbImage};

/// Decodes a BMP file (`BM` header, then a DIB).
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let offset = le32(bytes, 10).ok_or_else(|| Error::Truncated { format: "BMP", detail: "file header".into() })?;
    let bitmap = Bitmap::parse(bytes, 14, offset as u64, false, "BMP")?;
    finish(&bitmap, bytes, limits)
}

/// Decodes a bare DIB (`DibImageFile`: a `BITMAPINFOHEADER` or relative at offset 0, no file
/// header, the pixels right after the header and palette).
pub fn decode_dib(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let bitmap = Bitmap::parse(bytes, 0, 0, false, "DIB")?;
    finish(&bitmap, bytes, limits)
}

fn finish(bitmap: &Bitmap, bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    limits.check(bitmap.width.into(), bitmap.height.into())?;
    let pixels = bitmap.pixels(bytes, bitmap.height)?;
    let image = bitmap.to_rgb(&pixels, bitmap.height);
    Ok(Decoded { image, orientation: Orientation::Normal })
}

/// Pillow's image mode after `_bitmap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Bilevel, from a black-and-white palette: samples are 0 or 255.
    One,
    /// Gray, from a palette that is the gray ramp `0, 1, 2, ...`.
    L,
    /// Palette indices.
    P,
    /// Colour, alpha (if any) dropped.
    Rgb,
}

/// The libImaging unpacker a raw tile goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unpack {
    /// `1`: MSB-first bits, set bits 255.
    Bits,
    /// `L` / `P`: one byte per pixel.
    Byte,
    /// `P;1`: MSB-first bits.
    Index1,
    /// `P;4`: high nibble first.
    Index4,
    /// `BGR;15`: little-endian 16-bit `x rrrrr ggggg bbbbb`, each `v * 255 / 31`.
    Bgr15,
    /// `BGR;16`: little-endian 16-bit `rrrrr gggggg bbbbb` (`v * 255 / 63` for green).
    Bgr16,
    /// Whole bytes: `size` bytes per pixel, red, green and blue at these byte offsets.
    Bytes { size: usize, r: usize, g: usize, b: usize },
}

impl Unpack {
    /// Bits per pixel of the unpacker (RawDecode.c's `state->bits`).
    fn bits(self) -> u64 {
        match self {
            Unpack::Bits | Unpack::Index1 => 1,
            Unpack::Index4 => 4,
            Unpack::Byte => 8,
            Unpack::Bgr15 | Unpack::Bgr16 => 16,
            Unpack::Bytes { size, .. } => 8 * size as u64,
        }
    }
}

/// How the pixel data is coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    /// Rows of `stride` bytes unpacked by `Unpack`.
    Raw(Unpack),
    /// `BmpRleDecoder`, 4 bits (RLE4) or 8 bits (RLE8) per index.
    Rle { four_bits: bool },
}

/// One bitmap as `BmpImageFile._bitmap` describes it: size, mode, palette and the tile.
#[derive(Debug, Clone)]
pub(crate) struct Bitmap {
    pub width: u32,
    pub height: u32,
    pub mode: Mode,
    format: &'static str,
    coding: Coding,
    /// Bytes per row in the file (raw coding).
    stride: u64,
    /// Rows stored top row first (a negative height in the header).
    top_down: bool,
    /// Absolute position of the pixel data (the tile offset).
    data_at: u64,
    /// Pillow's 256-entry palette (`P` only): entries past the file's palette are black.
    palette: Vec<[u8; 3]>,
}

/// The decoded samples of a bitmap, top row first: one byte per pixel for `1`, `L` and `P`
/// (0/255, gray, index), three (RGB) for `RGB`.
pub(crate) type Samples = Vec<u8>;

impl Bitmap {
    /// Mirrors `_bitmap(header, offset)`: reads the info header at position `header`, the bitfield masks
    /// and the palette after it. `offset` is the pixel data's position from a file header (0:
    /// right after the palette); `cursor_alpha` is `CurImagePlugin`'s 32-bit case (a header at
    /// offset 22 reads 32-bit pixels as `BGRA`).
    pub(crate) fn parse(
        bytes: &[u8],
        header: u64,
        offset: u64,
        cursor_alpha: bool,
        format: &'static str,
    ) -> Result<Bitmap> {
        let truncated = |what: &str| Error::Truncated { format, detail: format!("{what} ends early") };
        let unsupported = |detail: String| Error::unsupported(format, detail);
        let at = usize::try_from(header).map_err(|_| truncated("header"))?;
        let header_size = le32(bytes, at).ok_or_else(|| truncated("header"))?;
        let data = at.checked_add(4).and_then(|s| bytes.get(s..s.checked_add(header_size.saturating_sub(4) as usize)?));
        let data = data.ok_or_else(|| truncated("header"))?;
        let mut pos = at as u64 + u64::from(header_size.max(4));
        let (width, height, bits, compression, colors, padding, top_down);
        let mut masks = [0u32; 4];
        match header_size {
            12 => {
                width = u32::from(le16(data, 0).unwrap_or(0));
                height = u32::from(le16(data, 2).unwrap_or(0));
                bits = le16(data, 6).unwrap_or(0);
                compression = 0;
                colors = 0;
                padding = 3u64;
                top_down = false;
            }
            40 | 52 | 56 | 64 | 108 | 124 => {
                let field = |i: usize| le32(data, i).unwrap_or(0);
                top_down = data.get(7) == Some(&0xFF);
                width = field(0);
                height = if top_down { 0u32.wrapping_sub(field(4)) } else { field(4) };
                bits = le16(data, 10).unwrap_or(0);
                compression = field(12);
                colors = field(28);
                padding = 4;
                if compression == 3 {
                    if data.len() >= 48 {
                        masks = [field(36), field(40), field(44), if data.len() >= 52 { field(48) } else { 0 }];
                    } else {
                        // A 40-byte header: three masks follow it.
                        for mask in &mut masks[..3] {
                            *mask = le32(bytes, pos as usize).ok_or_else(|| truncated("bitfield masks"))?;
                            pos += 4;
                        }
                    }
                }
            }
            other => return Err(unsupported(format!("Unsupported BMP header type ({other})"))),
        }
        // An absent colour count is `1 << bits` (only used for 1..=8 bits).
        let colors = if colors != 0 || bits > 16 { u64::from(colors) } else { 1u64 << bits };
        let mut data_at = offset;
        if offset == 14 + u64::from(header_size) && bits <= 8 {
            data_at += padding * colors;
        }
        let (mut mode, mut unpack) = match bits {
            1 => (Mode::P, Unpack::Index1),
            4 => (Mode::P, Unpack::Index4),
            8 => (Mode::P, Unpack::Byte),
            16 => (Mode::Rgb, Unpack::Bgr15),
            24 => (Mode::Rgb, BGR),
            32 => (Mode::Rgb, BGRX),
            other => return Err(unsupported(format!("Unsupported BMP pixel depth ({other})"))),
        };
        let rle = match compression {
            0 => {
                if bits == 32 && cursor_alpha {
                    unpack = BGRX; // BGRA: the alpha byte is dropped by convert("RGB")
                }
                None
            }
            1 | 2 => Some(compression == 2),
            3 => {
                unpack =
                    bitfields(bits, masks).ok_or_else(|| unsupported("Unsupported BMP bitfields layout".into()))?;
                None
            }
            other => return Err(unsupported(format!("Unsupported BMP compression ({other})"))),
        };
        let mut palette = Vec::new();
        if mode == Mode::P {
            if !(1..=65536).contains(&colors) {
                return Err(unsupported(format!("Unsupported BMP Palette size ({colors})")));
            }
            let start = (pos as usize).min(bytes.len());
            let end = start.saturating_add((padding * colors) as usize).min(bytes.len());
            let raw = &bytes[start..end];
            pos = end as u64;
            let entry = |i: u64| raw.get((i * padding) as usize..(i * padding + 3) as usize);
            let gray = |i: u64, v: u64| entry(i) == Some(&[v as u8; 3][..]);
            let grayscale =
                if colors == 2 { gray(0, 0) && gray(1, 255) } else { (0..colors).all(|i| gray(i, i & 0xFF)) };
            if grayscale {
                mode = if colors <= 2 { Mode::One } else { Mode::L };
                unpack = if colors <= 2 { Unpack::Bits } else { Unpack::Byte };
            } else {
                let entries = raw.len() / padding as usize;
                if entries > 256 {
                    return Err(Error::malformed(format, format!("palette of {entries} entries (at most 256)")));
                }
                palette = vec![[0u8; 3]; 256];
                for (slot, bgr) in palette.iter_mut().zip(raw.chunks_exact(padding as usize)) {
                    *slot = [bgr[2], bgr[1], bgr[0]];
                }
            }
        }
        let coding = match rle {
            Some(four_bits) if mode != Mode::Rgb => Coding::Rle { four_bits },
            Some(_) => return Err(unsupported(format!("{bits}-bit RLE (no unpacker for RGB)"))),
            None => Coding::Raw(unpack),
        };
        let stride = ((u64::from(width) * u64::from(bits) + 31) >> 3) & !3;
        if data_at == 0 {
            data_at = pos;
        }
        Ok(Bitmap { width, height, mode, format, coding, stride, top_down, data_at, palette })
    }

    /// The first `height` rows of the tile (ICO and CUR read half the header's height), top row
    /// first. The caller has checked `width x height` against the limits.
    pub(crate) fn pixels(&self, bytes: &[u8], height: u32) -> Result<Samples> {
        let (w, h) = (self.width as usize, height as usize);
        let channels = if self.mode == Mode::Rgb { 3 } else { 1 };
        let row_bytes = w * channels;
        let mut out = vec![0u8; row_bytes * h];
        let row_of = |i: usize| if self.top_down { i } else { h - 1 - i };
        match self.coding {
            Coding::Raw(unpack) => {
                let line = (self.width as u64 * unpack.bits()).div_ceil(8);
                if self.stride < line {
                    return Err(Error::malformed(self.format, "rows shorter than their pixels (decoder error)"));
                }
                let needed =
                    (h as u64 - 1).saturating_mul(self.stride).saturating_add(self.data_at).saturating_add(line);
                if needed > bytes.len() as u64 {
                    return Err(Error::Truncated { format: self.format, detail: "image file is truncated".into() });
                }
                for i in 0..h {
                    let start = (self.data_at + i as u64 * self.stride) as usize;
                    let src = &bytes[start..start + line as usize];
                    let dst = &mut out[row_of(i) * row_bytes..][..row_bytes];
                    unpack_row(unpack, src, dst);
                }
            }
            Coding::Rle { four_bits } => {
                let data = rle(bytes, self.data_at, four_bits, w, h);
                if data.len() < w * h {
                    return Err(Error::malformed(self.format, "not enough image data"));
                }
                for i in 0..h {
                    let src = &data[i * w..(i + 1) * w];
                    let dst = &mut out[row_of(i) * w..][..w];
                    if self.mode == Mode::One {
                        // `L` data into a `1` image (unpack18): non-zero is white.
                        for (d, &s) in dst.iter_mut().zip(src) {
                            *d = if s > 0 { 255 } else { 0 };
                        }
                    } else {
                        dst.copy_from_slice(src);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Absolute position of the pixel data (the tile offset).
    pub(crate) fn data_at(&self) -> u64 {
        self.data_at
    }

    /// `convert("RGB")` of samples from [`Bitmap::pixels`].
    pub(crate) fn to_rgb(&self, samples: &[u8], height: u32) -> RgbImage {
        let rgb = match self.mode {
            Mode::Rgb => samples.to_vec(),
            Mode::One | Mode::L => samples.iter().flat_map(|&v| [v; 3]).collect(),
            Mode::P => {
                samples.iter().flat_map(|&i| self.palette.get(usize::from(i)).copied().unwrap_or([0; 3])).collect()
            }
        };
        RgbImage::from_parts(self.width, height, rgb)
    }
}

const BGR: Unpack = Unpack::Bytes { size: 3, r: 2, g: 1, b: 0 };
const BGRX: Unpack = Unpack::Bytes { size: 4, r: 2, g: 1, b: 0 };

/// The raw mode of a `BITFIELDS` bitmap: Pillow's `SUPPORTED` masks and their `MASK_MODES`
/// (32 bits: the RGBA masks; 24 and 16 bits: the RGB masks). `None` for any other layout.
fn bitfields(bits: u16, [r, g, b, a]: [u32; 4]) -> Option<Unpack> {
    let bytes = |r, g, b| Some(Unpack::Bytes { size: 4, r, g, b });
    match (bits, r, g, b, a) {
        (32, 0xFF0000, 0xFF00, 0xFF, 0) => bytes(2, 1, 0),           // BGRX
        (32, 0xFF00_0000, 0xFF0000, 0xFF00, 0) => bytes(3, 2, 1),    // XBGR
        (32, 0xFF00_0000, 0xFF00, 0xFF, 0) => bytes(3, 1, 0),        // BGXR
        (32, 0xFF00_0000, 0xFF0000, 0xFF00, 0xFF) => bytes(3, 2, 1), // ABGR
        (32, 0xFF, 0xFF00, 0xFF0000, 0xFF00_0000) => bytes(0, 1, 2), // RGBA
        (32, 0xFF0000, 0xFF00, 0xFF, 0xFF00_0000) => bytes(2, 1, 0), // BGRA
        (32, 0xFF00_0000, 0xFF00, 0xFF, 0xFF0000) => bytes(3, 1, 0), // BGAR
        (32, 0, 0, 0, 0) => bytes(2, 1, 0),                          // BGRA
        (24, 0xFF0000, 0xFF00, 0xFF, _) => Some(BGR),
        (16, 0xF800, 0x7E0, 0x1F, _) => Some(Unpack::Bgr16),
        (16, 0x7C00, 0x3E0, 0x1F, _) => Some(Unpack::Bgr15),
        _ => None,
    }
}

/// One row through a libImaging unpacker; `dst` holds one byte per pixel (`1`, `L`, `P`) or
/// three (RGB).
fn unpack_row(unpack: Unpack, src: &[u8], dst: &mut [u8]) {
    match unpack {
        Unpack::Byte => dst.copy_from_slice(&src[..dst.len()]),
        Unpack::Bits | Unpack::Index1 => {
            let on = if unpack == Unpack::Bits { 255 } else { 1 };
            for (x, d) in dst.iter_mut().enumerate() {
                *d = if src[x / 8] & (0x80 >> (x % 8)) != 0 { on } else { 0 };
            }
        }
        Unpack::Index4 => {
            for (x, d) in dst.iter_mut().enumerate() {
                *d = if x % 2 == 0 { src[x / 2] >> 4 } else { src[x / 2] & 0x0F };
            }
        }
        Unpack::Bgr15 | Unpack::Bgr16 => {
            for (px, d) in src.chunks_exact(2).zip(dst.chunks_exact_mut(3)) {
                let v = u32::from(px[0]) | u32::from(px[1]) << 8;
                let (r, g) = if unpack == Unpack::Bgr15 {
                    (((v >> 10) & 31) * 255 / 31, ((v >> 5) & 31) * 255 / 31)
                } else {
                    (((v >> 11) & 31) * 255 / 31, ((v >> 5) & 63) * 255 / 63)
                };
                d.copy_from_slice(&[r as u8, g as u8, ((v & 31) * 255 / 31) as u8]);
            }
        }
        Unpack::Bytes { size, r, g, b } => {
            for (px, d) in src.chunks_exact(size).zip(dst.chunks_exact_mut(3)) {
                d.copy_from_slice(&[px[r], px[g], px[b]]);
            }
        }
    }
}

/// `BmpRleDecoder.decode`: the indices in file row order (bottom row first unless top-down),
/// rows of `w`, at most `w * h` meaningful bytes. Skipped pixels are 0. Word alignment after an
/// absolute run is on the absolute file position, as Pillow's `fd.tell() % 2`.
fn rle(bytes: &[u8], start: u64, four_bits: bool, w: usize, h: usize) -> Vec<u8> {
    let dest = w * h;
    let mut data: Vec<u8> = Vec::with_capacity(dest);
    let mut pos = usize::try_from(start).unwrap_or(usize::MAX);
    let mut x = 0usize;
    while data.len() < dest {
        let (Some(&count), Some(&byte)) = (bytes.get(pos), bytes.get(pos.saturating_add(1))) else { break };
        pos += 2;
        if count > 0 {
            let n = if x + usize::from(count) > w { w.saturating_sub(x) } else { usize::from(count) };
            if four_bits {
                data.extend((0..n).map(|i| if i % 2 == 0 { byte >> 4 } else { byte & 0x0F }));
            } else {
                data.extend(std::iter::repeat_n(byte, n));
            }
            x += n;
            continue;
        }
        match byte {
            0 => {
                // End of line.
                let pad = (w - data.len() % w) % w;
                data.resize(data.len() + pad, 0);
                x = 0;
            }
            1 => break,
            2 => {
                let Some(&[right, up]) = bytes.get(pos..pos.saturating_add(2)) else { break };
                pos += 2;
                let skip = (usize::from(right) + usize::from(up) * w).min(dest - data.len());
                data.resize(data.len() + skip, 0);
                x = data.len() % w;
            }
            run => {
                let count = (dest - data.len()).min(usize::from(run));
                let byte_count = if four_bits { count.div_ceil(2) } else { count };
                let available = bytes.get(pos..).unwrap_or(&[]);
                let read = &available[..byte_count.min(available.len())];
                pos = pos.saturating_add(read.len());
                if four_bits {
                    for (i, &b) in read.iter().enumerate() {
                        data.push(b >> 4);
                        if i * 2 + 1 < count {
                            data.push(b & 0x0F);
                        }
                    }
                } else {
                    data.extend_from_slice(read);
                }
                if read.len() < byte_count || data.len() == dest {
                    break;
                }
                x += usize::from(run);
                if pos % 2 != 0 {
                    pos += 1;
                }
            }
        }
    }
    data
}
