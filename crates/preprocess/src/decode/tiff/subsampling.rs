//! Chroma-subsampled YCbCr as libtiff packs it (TIFF 6.0 section 21) and as its RGBA interface
//! reads it for Pillow (`putcontig8bitYCbCr{44,42,41,22,21,12,11}tile` in tif_getimage.c): a
//! segment is rows of blocks, each block `h` x `v` pixels stored as its `h * v` Y samples row by
//! row, then one Cb and one Cr shared by the block's pixels. Blocks past the segment's right or
//! bottom edge are stored whole; their outside pixels are never read.
//!
//! [`Subsampling::expand`] turns such a segment into one Y, Cb, Cr triplet per pixel, which the
//! conversion of [`super::ycbcr::YCbCrToRgb`] then reads like unsubsampled data.

use super::ifd::Ifd;
use super::tags::YCBCR_SUBSAMPLING;
use crate::{Error, Result};

const FORMAT: &str = "TIFF";

/// The horizontal and vertical subsampling of an image: one of the pairs libtiff's RGBA interface
/// converts (4x4, 4x2, 4x1, 2x2, 2x1, 1x2; 1x1 is read as unsubsampled samples).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subsampling {
    h: usize,
    v: usize,
}

impl Subsampling {
    /// The IFD's YCbCrSubsampling (libtiff's default 2x2 where absent); `None` for 1x1;
    /// `Unsupported` naming the pair where libtiff has no routine for it (Pillow's
    /// "decoder error").
    pub fn of(ifd: &Ifd<'_>) -> Result<Option<Subsampling>> {
        let pair = ifd.ints(YCBCR_SUBSAMPLING).unwrap_or_else(|| vec![2, 2]);
        match pair.as_slice() {
            [1, 1] => Ok(None),
            &[h @ (1 | 2 | 4), v @ (1 | 2 | 4)] if v <= h || (h, v) == (1, 2) => {
                Ok(Some(Subsampling { h: h as usize, v: v as usize }))
            }
            _ => Err(Error::unsupported(FORMAT, format!("YCbCr subsampling {pair:?}"))),
        }
    }

    /// Bytes of one block: its Y samples, Cb and Cr.
    fn block_len(self) -> usize {
        self.h * self.v + 2
    }

    /// Bytes of one row of blocks across `width` pixels (libtiff's `samplingrow_size`).
    fn block_row_len(self, width: usize) -> Option<usize> {
        width.div_ceil(self.h).checked_mul(self.block_len())
    }

    /// Bytes of a segment `width` pixels wide and `rows` rows high (`TIFFVStripSize` /
    /// `TIFFVTileSize` of subsampled data).
    pub fn packed_len(self, width: usize, rows: usize) -> Option<usize> {
        self.block_row_len(width)?.checked_mul(rows.div_ceil(self.v))
    }

    /// libtiff's `TIFFScanlineSize` of subsampled data: a block row's bytes over `v`, rounded
    /// down (the row length of its predictor too).
    pub fn scanline(self, width: usize) -> Option<usize> {
        Some(self.block_row_len(width)? / self.v)
    }

    /// The bytes `gtStripContig` asks libtiff to decode from a strip of `rows` rows: the rows
    /// rounded up to whole blocks times [`Subsampling::scanline`], at most the strip's size (the
    /// rest of its zeroed buffer stays 0).
    pub fn strip_read_len(self, width: usize, rows: usize) -> Option<usize> {
        let read = rows.next_multiple_of(self.v).checked_mul(self.scanline(width)?)?;
        Some(read.min(self.packed_len(width, rows)?))
    }

    /// Whether a tile `width` pixels wide is read block-aligned by libtiff whatever its clipping
    /// (the width a multiple of `h`).
    pub fn fits_tile(self, width: usize) -> bool {
        width.is_multiple_of(self.h)
    }

    /// Writes `rows` rows of `width` Y, Cb, Cr triplets into `out` from the blocks of `packed`
    /// ([`Subsampling::packed_len`] bytes): each pixel's Y from its block, the block's Cb and Cr.
    pub fn expand(self, packed: &[u8], width: usize, rows: usize, out: &mut [u8]) {
        let (block_len, per_row) = (self.block_len(), width.div_ceil(self.h));
        for (r, row) in out.chunks_exact_mut(width * 3).take(rows).enumerate() {
            let block_row = (r / self.v) * per_row;
            let within = (r % self.v) * self.h;
            for (x, pixel) in row.chunks_exact_mut(3).enumerate() {
                let base = (block_row + x / self.h) * block_len;
                let at = |i: usize| packed.get(base + i).copied().unwrap_or(0);
                pixel.copy_from_slice(&[at(within + x % self.h), at(block_len - 2), at(block_len - 1)]);
            }
        }
    }
}
