//! The decoded image every later stage works on.

use crate::{Error, Result};

/// An 8-bit RGB image, row-major `[height, width, 3]` (HWC), channels in R, G, B order: what
/// Pillow's `image.convert("RGB")` holds and what `np.array(image)` gives the reference.
#[derive(Clone, PartialEq, Eq)]
pub struct RgbImage {
    width: u32,
    height: u32,
    data: Vec<u8>,
}

impl RgbImage {
    /// Wraps `data` (`width * height * 3` bytes, HWC). Errors on a zero dimension or a buffer
    /// of the wrong length.
    pub fn new(width: u32, height: u32, data: Vec<u8>) -> Result<Self> {
        if width == 0 || height == 0 {
            return Err(Error::ZeroSize { width: width.into(), height: height.into() });
        }
        let expected = (width as usize).checked_mul(height as usize).and_then(|n| n.checked_mul(3));
        if expected != Some(data.len()) {
            return Err(Error::invalid(
                "RGB buffer",
                format!("{width}x{height}x3 needs {expected:?} bytes, got {}", data.len()),
            ));
        }
        Ok(RgbImage { width, height, data })
    }

    /// Width in pixels (never 0).
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels (never 0).
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The pixels, `[height, width, 3]` u8, row-major.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The pixels, consuming the image.
    pub fn into_data(mut self) -> Vec<u8> {
        std::mem::take(&mut self.data)
    }

    /// Row `y`, `width * 3` bytes; `None` past the last row.
    pub fn row(&self, y: usize) -> Option<&[u8]> {
        let stride = self.width as usize * 3;
        self.data.get(y.checked_mul(stride)?..y.checked_add(1)?.checked_mul(stride)?)
    }

    /// Internal constructor for buffers whose size the caller has just computed.
    pub(crate) fn from_parts(width: u32, height: u32, data: Vec<u8>) -> Self {
        debug_assert_eq!(data.len(), width as usize * height as usize * 3);
        RgbImage { width, height, data }
    }
}

impl Drop for RgbImage {
    /// Hands large buffers to the `buffer_pool` for the next image.
    fn drop(&mut self) {
        crate::buffer_pool::give(std::mem::take(&mut self.data));
    }
}

impl std::fmt::Debug for RgbImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RgbImage").field("width", &self.width).field("height", &self.height).finish_non_exhaustive()
    }
}
