//! The plain twin of the fast resize: Pillow's `ImagingResampleInner` for 8-bit RGB, one pixel
//! and one channel at a time, in its loop order. Slow; kept to test the fast path against.

use super::coefficients::{Coefficients, HALF, clip8};
use crate::{Result, RgbImage};

/// [`resize_bicubic`](super::resize_bicubic) written as directly as Pillow's C: horizontal pass
/// over the source rows the vertical pass reads (`bounds_vert` first to last), u8 intermediate,
/// then the vertical pass, or the two the other way round when
/// [`vertical_first`](super::vertical_first); a pass runs only when its dimension changes.
pub fn resize_bicubic_reference(image: &RgbImage, width: u32, height: u32) -> Result<RgbImage> {
    crate::Limits::default().check(width.into(), height.into())?;
    let vert = Coefficients::bicubic(image.height(), height)?;
    let horiz = Coefficients::bicubic(image.width(), width)?;
    let need_horizontal = width != image.width();
    let need_vertical = height != image.height();
    if need_horizontal && need_vertical && super::vertical_first(image.width(), image.height(), width, height) {
        let columns = vertical_pass(image.data(), image.width() as usize, 0, &vert);
        let tmp = RgbImage::from_parts(image.width(), height, columns);
        let rows = horizontal_pass(&tmp, 0, height as usize, &horiz);
        return Ok(RgbImage::from_parts(width, height, rows));
    }
    let (first, last) = vert.input_span();
    let (mut cur_w, mut rows, mut cur): (usize, usize, Vec<u8>) =
        (image.width() as usize, image.height() as usize, image.data().to_vec());
    let mut row_offset = 0;
    if need_horizontal {
        cur = horizontal_pass(image, first, last, &horiz);
        cur_w = width as usize;
        rows = last - first;
        row_offset = first;
    }
    if need_vertical {
        cur = vertical_pass(&cur, cur_w, row_offset, &vert);
        rows = height as usize;
    }
    debug_assert_eq!(rows, height as usize);
    Ok(RgbImage::from_parts(cur_w as u32, rows as u32, cur))
}

/// Pillow's `ImagingResampleHorizontal_8bpc` on rows `first..last` of `image`.
fn horizontal_pass(image: &RgbImage, first: usize, last: usize, horiz: &Coefficients) -> Vec<u8> {
    let in_w = image.width() as usize;
    let out_w = horiz.start.len();
    let mut tmp = vec![0u8; (last - first) * out_w * 3];
    for (yy, out_row) in tmp.chunks_exact_mut(out_w * 3).enumerate() {
        let line = &image.data()[(yy + first) * in_w * 3..(yy + first + 1) * in_w * 3];
        for xx in 0..out_w {
            let xmin = horiz.start[xx];
            let k = horiz.of(xx);
            for c in 0..3 {
                let mut ss = HALF;
                for (x, &kx) in k.iter().enumerate() {
                    ss += i32::from(line[(x + xmin) * 3 + c]) * kx;
                }
                out_row[xx * 3 + c] = clip8(ss);
            }
        }
    }
    tmp
}

/// Pillow's `ImagingResampleVertical_8bpc`: `src` has `width` RGB pixels per row, its row `i`
/// being source row `i + row_offset`.
fn vertical_pass(src: &[u8], width: usize, row_offset: usize, vert: &Coefficients) -> Vec<u8> {
    let out_h = vert.start.len();
    let mut out = vec![0u8; out_h * width * 3];
    for (yy, out_row) in out.chunks_exact_mut(width * 3).enumerate() {
        let ymin = vert.start[yy] - row_offset;
        let k = vert.of(yy);
        for (xx, dst) in out_row.iter_mut().enumerate() {
            let mut ss = HALF;
            for (y, &ky) in k.iter().enumerate() {
                ss += i32::from(src[(y + ymin) * width * 3 + xx]) * ky;
            }
            *dst = clip8(ss);
        }
    }
    out
}
