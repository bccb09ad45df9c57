//! JPEG 2000 (`.jp2`, `.j2k`, `.jpx`, `.jpf`, `.jpc`, `.j2c`) as Pillow 13 reads it
//! (`Jpeg2KImagePlugin` and `Jpeg2KDecode.c` over OpenJPEG), then `.convert("RGB")`:
//!
//! 1. `header.rs`: the plugin's `_open`, giving the codec, Pillow's size and mode;
//! 2. the size against the limits, then Pillow's zeroed image memory of that mode;
//! 3. `openjpeg.rs`: OpenJPEG (openjpeg-sys's vendored 2.5.3, the same decoding as Pillow's
//!    2.5.4) reads the main header; a codestream over the limits is refused before any tile is
//!    read, one of more than 4 components or without an unpacker for the mode is refused as
//!    Pillow refuses it;
//! 4. tile by tile, each checked against the image and its buffer sized before allocation,
//!    `unpack.rs` (Pillow's `j2ku_*`) writes into the image memory;
//! 5. the image memory to RGB8 as Pillow's `convert("RGB")` does for the mode; `P` and `PA`
//!    (a `pclr` box) through `palette.rs`, the palette as Pillow builds it from the box.
//!
//! Pillow decodes tile by tile, and OpenJPEG applies a `pclr` box (with or without `cmap`) only
//! to a whole image: the samples of a palette image are its indices. No orientation is read
//! (Pillow reads no EXIF from these files).

mod header;
mod openjpeg;
mod palette;
mod unpack;

use super::Decoded;
use crate::{Error, Limits, Orientation, Result, RgbImage};
use header::Mode;
use unpack::{Canvas, Place};

const FORMAT: &str = "JPEG2000";

/// Decodes a JPEG 2000 file to RGB8, as `Image.open(f).convert("RGB")` on Pillow 13.
pub(crate) fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let header = header::parse(bytes)?;
    let (width, height) = (header.width as u64, header.height as u64);
    limits.check(width, height)?;
    let mut decoder = openjpeg::Decoder::open(bytes, header.codec)?;
    let info = decoder.info.clone();
    let broken =
        |detail: &str| Error::malformed(FORMAT, format!("broken data stream when reading image file ({detail})"));
    limits.check(u64::from(info.x1.saturating_sub(info.x0)), u64::from(info.y1.saturating_sub(info.y0))).map_err(
        |e| match e {
            e @ Error::TooManyPixels { .. } => e,
            _ => broken("an empty image area"),
        },
    )?;
    if !(1..=4).contains(&info.comps.len()) {
        return Err(broken(&format!("{} components", info.comps.len())));
    }
    let unpacker = unpack::select(header.mode, &info).ok_or_else(|| {
        broken(&format!(
            "no unpacker for mode {:?} from {} components in colour space {}",
            header.mode,
            info.comps.len(),
            info.color_space
        ))
    })?;
    let mut canvas = Canvas::new(header.mode, width as usize, height as usize);
    let mut buffer = Vec::new();
    while let Some(tile) = decoder.next_tile()? {
        let inside = tile.x0 < tile.x1
            && tile.y0 < tile.y1
            && tile.x0 >= 0
            && tile.y0 >= 0
            && tile.x0 as u32 >= info.x0
            && tile.y0 as u32 >= info.y0
            && i64::from(tile.x1) - i64::from(info.x0) <= header.width
            && i64::from(tile.y1) - i64::from(info.y0) <= header.height;
        if !inside {
            return Err(broken("a tile outside the image"));
        }
        if tile.nb_comps as usize != info.comps.len() {
            return Err(broken("a tile of another component count"));
        }
        let (w, h) = ((tile.x1 - tile.x0) as u64, (tile.y1 - tile.y0) as u64);
        let sample_bytes: u64 =
            info.comps.iter().map(|c| if (c.prec + 7) >> 3 == 3 { 4 } else { u64::from((c.prec + 7) >> 3) }).sum();
        let tile_bytes = w * h * sample_bytes;
        if tile_bytes > u64::from(u32::MAX) {
            return Err(broken("a tile over 4 GiB"));
        }
        if u64::from(tile.data_size) > tile_bytes {
            return Err(broken("OpenJPEG's tile larger than its samples"));
        }
        buffer.clear();
        buffer.resize(tile_bytes as usize, 0);
        decoder.decode_tile(&tile, &mut buffer)?;
        let place = Place {
            x0: (tile.x0 as u32 - info.x0) as usize,
            y0: (tile.y0 as u32 - info.y0) as usize,
            w: w as usize,
            h: h as usize,
        };
        unpack::unpack(unpacker, &info.comps, place, &buffer, &mut canvas);
    }
    decoder.finish()?;
    let colours = match (&header.palette, header.mode) {
        (Some(palette), Mode::P | Mode::Pa) => palette.colours()?,
        (None, Mode::P | Mode::Pa) => return Err(Error::malformed(FORMAT, "a palette mode without a palette")),
        _ => [[0, 0, 0, 255]; 256],
    };
    let rgb = to_rgb(&canvas, &colours);
    Ok(Decoded { image: RgbImage::from_parts(width as u32, height as u32, rgb), orientation: Orientation::Normal })
}

/// Pillow's `convert("RGB")` of the image memory: `L` and `LA` repeat the gray byte, `I;16`
/// clamps the word to 255, `RGB` and `RGBA` keep their first three bytes, `CMYK` goes through
/// `cmyk2rgb` (`nk - MULDIV255(c, nk)` with `nk = 255 - k`), `P` and `PA` take the first three
/// bytes of their index's entry in `colours` (the image's 256 palette entries).
fn to_rgb(canvas: &Canvas, colours: &[[u8; 4]; 256]) -> Vec<u8> {
    let mut rgb = crate::buffer_pool::take(canvas.width * canvas.height * 3);
    let pixels = canvas.data.chunks_exact(canvas.pixel);
    for (out, px) in rgb.chunks_exact_mut(3).zip(pixels) {
        let v: [u8; 3] = match canvas.mode {
            Mode::P | Mode::Pa => {
                let [r, g, b, _] = colours[usize::from(px[0])];
                [r, g, b]
            }
            Mode::L | Mode::La => [px[0]; 3],
            Mode::I16 => [u16::from_le_bytes([px[0], px[1]]).min(255) as u8; 3],
            Mode::Rgb | Mode::Rgba => [px[0], px[1], px[2]],
            Mode::Cmyk => {
                let nk = 255 - i32::from(px[3]);
                let c = |v: u8| {
                    let t = i32::from(v) * nk + 128;
                    (nk - (((t >> 8) + t) >> 8)).clamp(0, 255) as u8
                };
                [c(px[0]), c(px[1]), c(px[2])]
            }
        };
        out.copy_from_slice(&v);
    }
    rgb
}
