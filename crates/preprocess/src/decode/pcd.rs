//! PCD (Kodak PhotoCD) as Pillow's `PcdImagePlugin` reads it: only the 768x512 base image.
//!
//! `_open` (the plugin has no `_accept`): the file is PCD when the 1539 bytes at 2048 are all
//! there and start with `PCD_`; the last of them, `& 3`, is the orientation: 1 turns the image
//! a quarter counter-clockwise (`rotate(90, expand=True)`, Pillow's `ROTATE_90`), 3 a quarter
//! clockwise (`ROTATE_270`), making it 512x768; 0 and 2 leave it.
//!
//! The data starts at 96 * 2048 and is read by `PcdDecode.c` in 256 chunks of 3 * 768 bytes,
//! one per pair of rows: the two rows' luma (768 bytes each), then 384 bytes of Cb and 384 of
//! Cr shared by both (pixel `x` takes entry `x / 2`). Each pixel goes through the `YCC;P`
//! unpacker (`UnpackYCC.c`'s PhotoYCC tables, [`ycc_to_rgb`]). A file that ends before the
//! last chunk is refused as Pillow refuses it ("image file is truncated"); bytes after it are
//! ignored. There is no EXIF; the rotation is part of loading and always applied.

use super::Decoded;
use super::open_checks::{Header, Reader, Verdict, verdict};
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "PCD";

const WIDTH: usize = 768;
const HEIGHT: usize = 512;
/// Where the base image's data starts.
const DATA: usize = 96 * 2048;
/// One chunk: two rows of luma, then half a row each of Cb and Cr.
const CHUNK: usize = 3 * WIDTH;
/// Where the orientation byte is: the last of the 1539 bytes `_open` reads at 2048.
const ORIENTATION: usize = 2048 + 1538;

/// `PcdImagePlugin._open`: `PCD_` at byte 2048 and the 1539-byte block there complete.
pub(crate) fn is_pcd(header: Header<'_>) -> Verdict {
    verdict(|| {
        let mut r = Reader::new(header);
        r.read(2048)?;
        let block = r.read(1539)?;
        Ok(block.len() == 1539 && block.starts_with(b"PCD_"))
    })
}

/// Decodes the base image, turned as its orientation byte says.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    if is_pcd(Header { bytes, complete: true }) != Verdict::Yes {
        return Err(Error::malformed(FORMAT, "not a PCD file"));
    }
    let turn = match bytes[ORIENTATION] & 3 {
        1 => Orientation::Rotate90,
        3 => Orientation::Rotate270,
        _ => Orientation::Normal,
    };
    let (width, height) = if turn == Orientation::Normal { (WIDTH, HEIGHT) } else { (HEIGHT, WIDTH) };
    limits.check(width as u64, height as u64)?;
    let data = bytes.get(DATA..).unwrap_or(&[]);
    let Some(data) = data.get(..CHUNK * HEIGHT / 2) else {
        // Pillow's load: every complete chunk is decoded, the rest is left when the file ends.
        let left = data.len() % CHUNK;
        return Err(Error::Truncated {
            format: FORMAT,
            detail: format!("image file is truncated ({left} bytes not processed)"),
        });
    };
    let mut rgb = crate::buffer_pool::take(WIDTH * HEIGHT * 3);
    for (rows, chunk) in rgb.chunks_exact_mut(2 * WIDTH * 3).zip(data.chunks_exact(CHUNK)) {
        let (luma, chroma) = chunk.split_at(2 * WIDTH);
        let (cb, cr) = chroma.split_at(WIDTH / 2);
        for (row, luma) in rows.chunks_exact_mut(WIDTH * 3).zip(luma.chunks_exact(WIDTH)) {
            for (x, (out, &y)) in row.chunks_exact_mut(3).zip(luma).enumerate() {
                out.copy_from_slice(&ycc_to_rgb(y, cb[x / 2], cr[x / 2]));
            }
        }
    }
    let image = turn.apply(RgbImage::from_parts(WIDTH as u32, HEIGHT as u32, rgb));
    Ok(Decoded { image, orientation: Orientation::Normal })
}

/// `YCC2RGB`: `r = L[y] + CR[cr]`, `g = L[y] + GR[cr] + GB[cb]`, `b = L[y] + CB[cb]`, each
/// clamped to `[0, 255]`.
fn ycc_to_rgb(y: u8, cb: u8, cr: u8) -> [u8; 3] {
    let t = &TABLES;
    let l = t.l[usize::from(y)];
    let (cb, cr) = (usize::from(cb), usize::from(cr));
    let clamp = |v: i16| v.clamp(0, 255) as u8;
    [clamp(l + t.cr[cr]), clamp(l + t.gr[cr] + t.gb[cb]), clamp(l + t.cb[cb])]
}

/// `UnpackYCC.c`'s tables: the PhotoYCC transform (`L = 1.3584 Y`, `C1 = 2.2179 (Cb - 156)`,
/// `C2 = 1.8215 (Cr - 137)`, `R = L + C2`, `G = L - 0.194 C1 - 0.509 C2`, `B = L + C1`), each
/// term in double precision rounded as `(int)(v + 0.5)` (towards zero after adding a half).
struct Tables {
    l: [i16; 256],
    cb: [i16; 256],
    cr: [i16; 256],
    gb: [i16; 256],
    gr: [i16; 256],
}

const fn table(scale: f64, offset: f64) -> [i16; 256] {
    let mut out = [0i16; 256];
    let mut i = 0;
    while i < 256 {
        out[i] = (scale * (i as f64 - offset) + 0.5) as i16;
        i += 1;
    }
    out
}

const TABLES: Tables = Tables {
    l: table(1.3584, 0.0),
    cb: table(2.2179, 156.0),
    cr: table(1.8215, 137.0),
    gb: table(-0.194 * 2.2179, 156.0),
    gr: table(-0.509 * 1.8215, 137.0),
};
