//! The decoded samples of a whole image, plane by plane, before Pillow's unpacking: one plane
//! of interleaved samples (`PlanarConfiguration` 1) or one plane per sample (2), each row
//! `row_bytes` long, samples of `bits` bits packed MSB first, multi-byte samples in the file's
//! byte order.

use super::ifd::ByteOrder;

#[derive(Debug)]
pub struct Raster {
    pub width: usize,
    pub height: usize,
    pub planes: Vec<Vec<u8>>,
    pub row_bytes: usize,
    /// Samples per pixel within one plane (1 for planar data).
    pub samples: usize,
    pub bits: u8,
    pub order: ByteOrder,
}

impl Raster {
    /// Bytes of one row of one plane.
    pub fn row_bytes(width: usize, samples: usize, bits: u8) -> Option<usize> {
        width.checked_mul(samples)?.checked_mul(usize::from(bits)).map(|b| b.div_ceil(8))
    }

    /// A reader of pixel `x`'s sample `s` in row `y` (plane `s` of planar data); 0 outside.
    pub fn sample(&self, y: usize, x: usize, s: usize) -> u32 {
        let (plane, index) = if self.planes.len() > 1 { (s, x) } else { (0, x * self.samples + s) };
        let Some(row) = self.planes.get(plane).and_then(|p| p.get(y * self.row_bytes..(y + 1) * self.row_bytes)) else {
            return 0;
        };
        let at = |i: usize| row.get(i).copied().unwrap_or(0);
        match self.bits {
            8 => u32::from(at(index)),
            16 => u32::from(self.order.u16([at(2 * index), at(2 * index + 1)])),
            32 => self.order.u32([at(4 * index), at(4 * index + 1), at(4 * index + 2), at(4 * index + 3)]),
            bits => {
                let bits = usize::from(bits);
                let start = index * bits;
                let mut v = 0u32;
                for b in start..start + bits {
                    let bit = (at(b / 8) >> (7 - b % 8)) & 1;
                    v = (v << 1) | u32::from(bit);
                }
                v
            }
        }
    }
}
