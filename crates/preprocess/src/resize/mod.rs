//! Pillow-exact bicubic resize of 8-bit RGB images.
//!
//! `resize_bicubic(image, w, h)` returns exactly the bytes of the reference's
//! `np.array(Image.fromarray(hwc_u8).resize((w, h), Image.BICUBIC))` (Pillow's
//! `ImagingResampleInner` with its 8-bit passes): per-axis weights from [`Coefficients`], two
//! separable passes with a u8 intermediate; a pass is skipped when its dimension is unchanged,
//! and the same size returns the image unchanged.
//!
//! The pass order is Pillow 13's (python-pillow/Pillow#9549): the vertical pass runs first when
//! the height shrinks by more than twice as many pixels as the width does
//! (`out_h < in_h && in_h - out_h > 2 * (in_w - out_w)`, see [`vertical_first`]); otherwise the
//! horizontal pass runs first, over the source rows the vertical pass needs. The order changes
//! the rounding of the intermediate, so it decides bytes.

mod coefficients;
mod horizontal;
mod reference;
mod simd;
mod vertical;

pub use coefficients::Coefficients;
pub use reference::resize_bicubic_reference;

use crate::{Error, Limits, Result, RgbImage};

/// Resizes to `width x height` (Pillow `Image.resize((width, height), Image.BICUBIC)`), using
/// rayon's pool for both passes. A target of more than [`Limits::PILLOW_BOMB_PIXELS`] pixels
/// is [`Error::TooManyPixels`], refused before anything is allocated.
pub fn resize_bicubic(image: &RgbImage, width: u32, height: u32) -> Result<RgbImage> {
    if width == 0 || height == 0 {
        return Err(Error::invalid("resize", format!("target size {width}x{height} has a zero dimension")));
    }
    Limits::default().check(width.into(), height.into())?;
    if (width, height) == (image.width(), image.height()) {
        return Ok(image.clone());
    }
    let vert = Coefficients::bicubic(image.height(), height)?;
    let need_horizontal = width != image.width();
    let need_vertical = height != image.height();
    if need_horizontal && need_vertical && vertical_first(image.width(), image.height(), width, height) {
        let horiz = Coefficients::bicubic(image.width(), width)?;
        let in_row = image.width() as usize * 3;
        let mut tmp = vec![0u8; height as usize * in_row];
        vertical::vertical(image.data(), in_row, 0, &vert, &mut tmp);
        let mut out = vec![0u8; height as usize * width as usize * 3];
        horizontal::horizontal(&tmp, image.width() as usize, 0, &horiz, &mut out);
        return Ok(RgbImage::from_parts(width, height, out));
    }
    let (first, last) = vert.input_span();

    let in_w = image.width() as usize;
    let horizontal_out = if need_horizontal {
        let horiz = Coefficients::bicubic(image.width(), width)?;
        let mut tmp = vec![0u8; (last - first) * width as usize * 3];
        horizontal::horizontal(image.data(), in_w, first, &horiz, &mut tmp);
        Some(tmp)
    } else {
        None
    };
    if !need_vertical {
        // Unchanged height: the vertical span is every row, so the pass output is the image.
        return match horizontal_out {
            Some(rows) => Ok(RgbImage::from_parts(width, height, rows)),
            None => Ok(image.clone()),
        };
    }
    let (src, row_offset): (&[u8], usize) = match &horizontal_out {
        Some(rows) => (rows, first),
        None => (image.data(), 0),
    };
    let row_len = width as usize * 3;
    let mut out = vec![0u8; height as usize * row_len];
    vertical::vertical(src, row_len, row_offset, &vert, &mut out);
    Ok(RgbImage::from_parts(width, height, out))
}

/// Pillow 13's pass order: vertical first when the height is scaled down and loses more than
/// twice as many pixels as the width (`ysize < in_ysize && in_ysize - ysize > 2 * (in_xsize -
/// xsize)`), established against Pillow 13.0.0 on thousands of size combinations.
pub fn vertical_first(in_w: u32, in_h: u32, out_w: u32, out_h: u32) -> bool {
    out_h < in_h && i64::from(in_h) - i64::from(out_h) > 2 * (i64::from(in_w) - i64::from(out_w))
}
