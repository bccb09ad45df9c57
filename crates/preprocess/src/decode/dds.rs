//! DDS as Pillow's `DdsImagePlugin` reads it, then `convert("RGB")`.
//!
//! The 128-byte header (`DDS `, a header size of 124) gives the size and the pixel format,
//! tested in Pillow's order:
//! - `DDPF_RGB`: the `dds_rgb` decoder, pixels of `bitcount / 8` little-endian bytes, each
//!   channel `int((v & mask) >> shift) / (mask >> shift) * 255)` in double precision (0 for a
//!   zero mask); alpha (with `DDPF_ALPHAPIXELS`) dropped;
//! - `DDPF_LUMINANCE`: 8-bit `L` or, with alpha, 16-bit `LA` (alpha dropped);
//! - `DDPF_PALETTEINDEXED8`: a 256-entry RGBA palette, then 8-bit indices;
//! - `DDPF_FOURCC`: `DXT1`/`DXT3`/`DXT5`, `BC4U`/`ATI1`, `BC5U`/`ATI2`, `BC5S`, or `DX10` with a
//!   DXGI format of BC1-BC5 (typeless or UNORM; BC5 SNORM), BC6H (UF16, SF16), BC7 (typeless,
//!   UNORM, UNORM_SRGB, no gamma applied) or R8G8B8A8 (raw RGBA);
//!
//! anything else is refused as Pillow refuses it. Block-compressed data is decoded as
//! `BcnDecode.c` decodes it (integer interpolation: BC1 thirds and halves, BC3/BC4/BC5
//! sevenths and fifths, BC7 64ths with `+ 32 >> 6`, BC6H through half floats clamped to
//! `[0, 1]` and truncated), blocks row by row, clipped at the image's edges; transparent BC1
//! pixels are black. Data shorter than the image is refused.

use super::Decoded;
use super::bcn::{Bcn, blocks};
use super::bytes::le32;
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "DDS";

const HEADER: usize = 128;
const DX10_HEADER: usize = 20;

const DDPF_ALPHAPIXELS: u32 = 0x1;
const DDPF_FOURCC: u32 = 0x4;
const DDPF_PALETTEINDEXED8: u32 = 0x20;
const DDPF_RGB: u32 = 0x40;
const DDPF_LUMINANCE: u32 = 0x20000;

/// How the pixel data after the header is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pixels {
    Masked { bitcount: u32, masks: [u32; 4], channels: usize },
    Gray { bytes: usize },
    Palette,
    Rgba,
    Blocks(Bcn),
}

/// The little-endian `u32` field at `at`, 0 past the end.
fn field(bytes: &[u8], at: usize) -> u32 {
    le32(bytes, at).unwrap_or(0)
}

fn fourcc(code: &[u8; 4]) -> u32 {
    u32::from_le_bytes(*code)
}

fn truncated() -> Error {
    Error::Truncated { format: FORMAT, detail: "image file is truncated".into() }
}

fn unsupported(detail: String) -> Error {
    Error::Unsupported { format: FORMAT, detail }
}

/// Decodes the image; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    if !bytes.starts_with(b"DDS ") {
        return Err(Error::malformed(FORMAT, "not a DDS file"));
    }
    let header_size = field(bytes, 4);
    if header_size != 124 {
        return Err(Error::malformed(FORMAT, format!("unsupported header size {header_size}")));
    }
    if bytes.len() < HEADER {
        return Err(Error::Truncated { format: FORMAT, detail: format!("incomplete header: {} bytes", bytes.len()) });
    }
    let (height, width) = (field(bytes, 12), field(bytes, 16));
    let (pf_flags, code, bitcount) = (field(bytes, 80), field(bytes, 84), field(bytes, 88));
    let mut offset = HEADER;
    let pixels = if pf_flags & DDPF_RGB != 0 {
        let channels = if pf_flags & DDPF_ALPHAPIXELS != 0 { 4 } else { 3 };
        let masks = [field(bytes, 92), field(bytes, 96), field(bytes, 100), field(bytes, 104)];
        Pixels::Masked { bitcount, masks, channels }
    } else if pf_flags & DDPF_LUMINANCE != 0 {
        match bitcount {
            8 => Pixels::Gray { bytes: 1 },
            16 if pf_flags & DDPF_ALPHAPIXELS != 0 => Pixels::Gray { bytes: 2 },
            _ => return Err(unsupported(format!("bitcount {bitcount} for {pf_flags}"))),
        }
    } else if pf_flags & DDPF_PALETTEINDEXED8 != 0 {
        Pixels::Palette
    } else if pf_flags & DDPF_FOURCC != 0 {
        match code {
            c if c == fourcc(b"DXT1") => Pixels::Blocks(Bcn::Bc1),
            c if c == fourcc(b"DXT3") => Pixels::Blocks(Bcn::Bc2),
            c if c == fourcc(b"DXT5") => Pixels::Blocks(Bcn::Bc3),
            c if c == fourcc(b"BC4U") || c == fourcc(b"ATI1") => Pixels::Blocks(Bcn::Bc4),
            c if c == fourcc(b"BC5S") => Pixels::Blocks(Bcn::Bc5 { signed: true }),
            c if c == fourcc(b"BC5U") || c == fourcc(b"ATI2") => Pixels::Blocks(Bcn::Bc5 { signed: false }),
            c if c == fourcc(b"DX10") => {
                let dx10 = bytes.get(HEADER..HEADER + DX10_HEADER).ok_or_else(truncated)?;
                offset += DX10_HEADER;
                match field(dx10, 0) {
                    70 | 71 => Pixels::Blocks(Bcn::Bc1),
                    73 | 74 => Pixels::Blocks(Bcn::Bc2),
                    76 | 77 => Pixels::Blocks(Bcn::Bc3),
                    79 | 80 => Pixels::Blocks(Bcn::Bc4),
                    82 | 83 => Pixels::Blocks(Bcn::Bc5 { signed: false }),
                    84 => Pixels::Blocks(Bcn::Bc5 { signed: true }),
                    95 => Pixels::Blocks(Bcn::Bc6 { signed: false }),
                    96 => Pixels::Blocks(Bcn::Bc6 { signed: true }),
                    97..=99 => Pixels::Blocks(Bcn::Bc7),
                    27..=29 => Pixels::Rgba,
                    other => return Err(unsupported(format!("unimplemented DXGI format {other}"))),
                }
            }
            other => return Err(unsupported(format!("unimplemented pixel format {other}"))),
        }
    } else {
        return Err(unsupported(format!("unknown pixel format flags {pf_flags}")));
    };
    limits.check(width.into(), height.into())?;
    let (w, h) = (width as usize, height as usize);
    // The data must cover the image before the pixel buffer is allocated.
    let needed = match pixels {
        Pixels::Masked { bitcount, .. } => (w * h).checked_mul((bitcount / 8) as usize).filter(|&n| n > 0),
        Pixels::Gray { bytes: step } => Some(w * h * step),
        Pixels::Palette => Some(1024 + w * h),
        Pixels::Rgba => Some(w * h * 4),
        Pixels::Blocks(bcn) => w.div_ceil(4).checked_mul(h.div_ceil(4)).and_then(|n| n.checked_mul(bcn.block_bytes())),
    };
    if needed.is_none_or(|n| bytes.len() - offset < n) {
        return Err(match pixels {
            Pixels::Masked { .. } => Error::Truncated { format: FORMAT, detail: "not enough image data".into() },
            _ => truncated(),
        });
    }
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    match pixels {
        Pixels::Masked { bitcount, masks, channels } => {
            masked(&bytes[offset..], bitcount, &masks[..channels], &mut rgb)?
        }
        Pixels::Gray { bytes: step } => {
            let data = bytes[offset..].get(..w * h * step).ok_or_else(truncated)?;
            for (out, px) in rgb.chunks_exact_mut(3).zip(data.chunks_exact(step)) {
                out.fill(px[0]);
            }
        }
        Pixels::Palette => {
            let palette = bytes[offset..].get(..1024).ok_or_else(truncated)?;
            let data = bytes[offset + 1024..].get(..w * h).ok_or_else(truncated)?;
            for (out, &i) in rgb.chunks_exact_mut(3).zip(data) {
                let at = usize::from(i) * 4;
                out.copy_from_slice(&palette[at..at + 3]);
            }
        }
        Pixels::Rgba => {
            let data = bytes[offset..].get(..w * h * 4).ok_or_else(truncated)?;
            for (out, px) in rgb.chunks_exact_mut(3).zip(data.chunks_exact(4)) {
                out.copy_from_slice(&px[..3]);
            }
        }
        Pixels::Blocks(bcn) => blocks(&bytes[offset..], bcn, w, h, &mut rgb).ok_or_else(truncated)?,
    }
    Ok(Decoded { image: RgbImage::from_parts(width, height, rgb), orientation: Orientation::Normal })
}

/// `DdsRgbDecoder`: each pixel `bitcount / 8` little-endian bytes; each channel's masked bits
/// shifted down and scaled as `int(v / (mask >> shift) * 255)`. Fewer bytes than the image
/// (or a bitcount below 8) is "not enough image data".
fn masked(data: &[u8], bitcount: u32, masks: &[u32], rgb: &mut [u8]) -> Result<()> {
    let not_enough = || Error::Truncated { format: FORMAT, detail: "not enough image data".into() };
    let step = (bitcount / 8) as usize;
    let pixels = rgb.len() / 3;
    if step == 0 {
        return Err(not_enough());
    }
    let data = pixels.checked_mul(step).and_then(|n| data.get(..n)).ok_or_else(not_enough)?;
    let shifts: Vec<u32> = masks.iter().map(|m| if *m == 0 { 0 } else { m.trailing_zeros() }).collect();
    for (out, px) in rgb.chunks_exact_mut(3).zip(data.chunks_exact(step)) {
        let mut low = [0u8; 4];
        for (l, b) in low.iter_mut().zip(px) {
            *l = *b;
        }
        let value = u32::from_le_bytes(low);
        for ((o, &mask), &shift) in out.iter_mut().zip(masks).zip(&shifts) {
            let total = mask >> shift;
            *o = if total == 0 { 0 } else { (f64::from((value & mask) >> shift) / f64::from(total) * 255.0) as u8 };
        }
    }
    Ok(())
}
