//! CIELab TIFFs (photometric 8, three 8-bit samples) as Pillow 13 reads them and mlx-vlm's
//! `convert("RGB")` turns them into RGB: Pillow's mode `LAB` storage, then
//! [`cielab`](crate::decode::cielab)'s Little CMS transform.
//!
//! The storage (`Unpack.c`): contiguous samples go through the `LAB` unpacker, which keeps L*
//! and flips the sign bit of a* and b* (`^ 128`: the file's two's complement to Pillow's
//! offset-128 bytes); planar samples are copied band by band (the raw decoder's `L`/`A`/`B`
//! band unpackers, libtiff's planes through the `RGBA` band unpackers), a* and b* unflipped.

use super::raster::Raster;
use crate::decode::cielab;
use crate::{Error, Result};

/// The RGB8 (HWC) image of an 8-bit CIELab raster, as Pillow 13's `convert("RGB")` gives it:
/// one plane of L*, a*, b* triplets (a* and b* signed) or three planes (bands copied as
/// stored).
pub fn to_rgb(raster: &Raster) -> Result<Vec<u8>> {
    let layout_ok = raster.bits == 8
        && match raster.planes.len() {
            1 => raster.samples == 3,
            3 => raster.samples == 1,
            _ => false,
        };
    if !layout_ok {
        return Err(Error::unsupported(
            super::FORMAT,
            format!("CIELab of {} planes of {} {}-bit samples", raster.planes.len(), raster.samples, raster.bits),
        ));
    }
    cielab::to_rgb(raster.width, raster.height, super::FORMAT, |y, lab| storage_row(raster, y, lab))
}

/// Row `y` in Pillow's `LAB` storage: L*, a*, b*, 255 per pixel.
fn storage_row(raster: &Raster, y: usize, lab: &mut [u8]) {
    let start = y * raster.row_bytes;
    let span = start..start + raster.width * raster.samples;
    match raster.planes.as_slice() {
        [plane] => {
            let Some(src) = plane.get(span) else { return };
            for (d, s) in lab.chunks_exact_mut(4).zip(src.chunks_exact(3)) {
                d.copy_from_slice(&[s[0], s[1] ^ 128, s[2] ^ 128, 255]);
            }
        }
        [l, a, b] => {
            let (Some(l), Some(a), Some(b)) = (l.get(span.clone()), a.get(span.clone()), b.get(span)) else {
                return;
            };
            for (((d, l), a), b) in lab.chunks_exact_mut(4).zip(l).zip(a).zip(b) {
                d.copy_from_slice(&[*l, *a, *b, 255]);
            }
        }
        _ => {}
    }
}
