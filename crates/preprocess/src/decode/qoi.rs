//! QOI as Pillow's `QoiImagePlugin` (a Python decoder) reads it, then `convert("RGB")`.
//!
//! The header is `qoif`, big-endian width and height, the channel count (3 is `RGB`, any other
//! value `RGBA`, whose alpha `convert("RGB")` drops) and a colour space byte that is ignored.
//! The ops are decoded as Pillow decodes them, which differs from the specification in two
//! places: every op but a run (`QOI_OP_INDEX` included) stores its pixel in the 64-entry
//! table at the pixel's hash, and an index into an empty slot gives `(0, 0, 0, 0)`. A run may
//! go past the image's end (the excess is dropped); data that ends before the image does is
//! refused ("not enough image data").

use super::Decoded;
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "QOI";

const HEADER: usize = 14;

/// Decodes the image; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let header = bytes.get(..HEADER).ok_or_else(|| Error::malformed(FORMAT, "shorter than the 14-byte header"))?;
    if !header.starts_with(b"qoif") {
        return Err(Error::malformed(FORMAT, "not a QOI file"));
    }
    let width = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    let height = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
    limits.check(width.into(), height.into())?;
    let pixels = width as usize * height as usize;
    let data = bytes.get(HEADER..).unwrap_or_default();
    // No op yields more than 62 pixels: data too short for the image is refused unallocated.
    if data.len().saturating_mul(62) < pixels {
        return Err(Error::Truncated { format: FORMAT, detail: "not enough image data".into() });
    }
    let mut rgb = crate::buffer_pool::take(pixels * 3);
    let written = decode_ops(data, &mut rgb);
    if written < pixels {
        return Err(Error::Truncated { format: FORMAT, detail: "not enough image data".into() });
    }
    Ok(Decoded { image: RgbImage::from_parts(width, height, rgb), orientation: Orientation::Normal })
}

fn hash(p: [u8; 4]) -> usize {
    (usize::from(p[0]) * 3 + usize::from(p[1]) * 5 + usize::from(p[2]) * 7 + usize::from(p[3]) * 11) % 64
}

/// Runs the ops of `data` until `rgb` is full or the data ends (an op cut short ends it);
/// returns the number of pixels written.
fn decode_ops(data: &[u8], rgb: &mut [u8]) -> usize {
    let total = rgb.len() / 3;
    let mut seen: [Option<[u8; 4]>; 64] = [None; 64];
    let mut previous = [0u8, 0, 0, 255];
    let mut written = 0;
    let mut at = 0;
    let mut put = |p: [u8; 4], count: usize, written: &mut usize| {
        for _ in 0..count.min(total - *written) {
            if let Some(out) = rgb.get_mut(*written * 3..*written * 3 + 3) {
                out.copy_from_slice(&p[..3]);
            }
            *written += 1;
        }
    };
    while written < total {
        let Some(&op) = data.get(at) else { break };
        at += 1;
        let value = match op {
            0xFE => {
                let Some(c) = data.get(at..at + 3) else { break };
                at += 3;
                [c[0], c[1], c[2], previous[3]]
            }
            0xFF => {
                let Some(c) = data.get(at..at + 4) else { break };
                at += 4;
                [c[0], c[1], c[2], c[3]]
            }
            _ => match op >> 6 {
                0 => seen[usize::from(op & 0x3F)].unwrap_or([0; 4]),
                1 => {
                    let d = |shift: u8| ((op >> shift) & 3).wrapping_sub(2);
                    [
                        previous[0].wrapping_add(d(4)),
                        previous[1].wrapping_add(d(2)),
                        previous[2].wrapping_add(d(0)),
                        previous[3],
                    ]
                }
                2 => {
                    let Some(&second) = data.get(at) else { break };
                    at += 1;
                    let green = (op & 0x3F).wrapping_sub(32);
                    let red = (second >> 4).wrapping_sub(8);
                    let blue = (second & 0x0F).wrapping_sub(8);
                    [
                        previous[0].wrapping_add(green).wrapping_add(red),
                        previous[1].wrapping_add(green),
                        previous[2].wrapping_add(green).wrapping_add(blue),
                        previous[3],
                    ]
                }
                _ => {
                    put(previous, usize::from(op & 0x3F) + 1, &mut written);
                    continue;
                }
            },
        };
        previous = value;
        seen[hash(value)] = Some(value);
        put(value, 1, &mut written);
    }
    written
}
