//! Resource limits checked from the header, before any pixel buffer is allocated.

use crate::{Error, Result};

/// Limits on what a decoder may allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest `width * height` accepted. The default, 178 956 970, is Pillow's own
    /// decompression-bomb threshold (`2 * Image.MAX_IMAGE_PIXELS`), past which the reference's
    /// `Image.open` raises `DecompressionBombError`.
    pub max_pixels: u64,
}

impl Limits {
    /// Pillow's `2 * MAX_IMAGE_PIXELS` (`MAX_IMAGE_PIXELS = 1024 * 1024 * 1024 // 4 // 3`).
    pub const PILLOW_BOMB_PIXELS: u64 = 2 * (1024 * 1024 * 1024 / 4 / 3);

    /// Bytes of metadata (EXIF, ICC profiles, text chunks, …) a file may carry on top of its
    /// pixels before [`max_file_bytes`](Self::max_file_bytes) refuses it.
    pub const METADATA_BYTES: u64 = 16 << 20;

    /// The largest image file [`open`](crate::open) reads: `max_pixels` pixels stored
    /// uncompressed at 8 bytes each (16-bit RGBA, the widest sample layout the decoders take)
    /// plus [`METADATA_BYTES`](Self::METADATA_BYTES). No image within the pixel limit needs a
    /// larger file; larger files, and endless inputs such as a pipe that never closes, are
    /// refused after at most this many bytes.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_pixels.saturating_mul(8).saturating_add(Self::METADATA_BYTES)
    }

    /// Accepts a `width x height` header: both non-zero and at most `max_pixels` pixels.
    pub fn check(&self, width: u64, height: u64) -> Result<()> {
        if width == 0 || height == 0 {
            return Err(Error::ZeroSize { width, height });
        }
        let pixels = width.saturating_mul(height);
        if pixels > self.max_pixels {
            return Err(Error::TooManyPixels { width, height, pixels, max_pixels: self.max_pixels });
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_pixels: Self::PILLOW_BOMB_PIXELS }
    }
}
