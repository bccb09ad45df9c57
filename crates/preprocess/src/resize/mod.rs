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
//!
//! The passes are interleaved rather than run one after the other: each worker produces the
//! intermediate rows a band of output rows needs into a small ring (horizontal first) or a tile
//! (vertical first) and consumes them at once, so the full-size intermediate never exists. Every
//! intermediate byte is still computed exactly as Pillow computes it, so the output is the same.
//!
//! The inner loops run on the widest `Kernel` the CPU has: AVX2 (32 lanes,
//! detected at run time) or the portable 16-lane one; both are Pillow's integer arithmetic.

mod coefficients;
mod kernel;
mod portable;
mod reference;
mod taps;

#[cfg(target_arch = "x86_64")]
mod avx2;

pub use coefficients::Coefficients;
pub use reference::resize_bicubic_reference;

use crate::{Error, Limits, Result, RgbImage};
use kernel::Kernel;
use rayon::prelude::*;
use taps::PairedTaps;

/// Resizes to `width x height` (Pillow `Image.resize((width, height), Image.BICUBIC)`), using
/// rayon's pool for both passes. A target of more than [`Limits::PILLOW_BOMB_PIXELS`] pixels
/// is [`Error::TooManyPixels`], refused before anything is allocated.
pub fn resize_bicubic(image: &RgbImage, width: u32, height: u32) -> Result<RgbImage> {
    resize_with(Kernel::detect(), image, width, height)
}

/// [`resize_bicubic`] on a given kernel.
fn resize_with(kernel: Kernel, image: &RgbImage, width: u32, height: u32) -> Result<RgbImage> {
    if width == 0 || height == 0 {
        return Err(Error::invalid("resize", format!("target size {width}x{height} has a zero dimension")));
    }
    Limits::default().check(width.into(), height.into())?;
    if (width, height) == (image.width(), image.height()) {
        return Ok(image.clone());
    }
    let horiz = match width != image.width() {
        true => Some(PairedTaps::new(Coefficients::bicubic(image.width(), width)?)),
        false => None,
    };
    let vert = match height != image.height() {
        true => Some(PairedTaps::new(Coefficients::bicubic(image.height(), height)?)),
        false => None,
    };
    // Every byte is written by the passes.
    let mut out = crate::buffer_pool::take(height as usize * width as usize * 3);
    match (&horiz, &vert) {
        (None, None) => out.copy_from_slice(image.data()),
        (Some(horiz), None) => horizontal_only(kernel, image, horiz, &mut out),
        (None, Some(vert)) => vertical_only(kernel, image, vert, &mut out),
        (Some(horiz), Some(vert)) if vertical_first(image.width(), image.height(), width, height) => {
            vertical_then_horizontal(kernel, image, horiz, vert, &mut out)
        }
        (Some(horiz), Some(vert)) => horizontal_then_vertical(kernel, image, horiz, vert, &mut out),
    }
    Ok(RgbImage::from_parts(width, height, out))
}

/// Pillow 13's pass order: vertical first when the height is scaled down and loses more than
/// twice as many pixels as the width (`ysize < in_ysize && in_ysize - ysize > 2 * (in_xsize -
/// xsize)`), established against Pillow 13.0.0 on thousands of size combinations.
pub fn vertical_first(in_w: u32, in_h: u32, out_w: u32, out_h: u32) -> bool {
    out_h < in_h && i64::from(in_h) - i64::from(out_h) > 2 * (i64::from(in_w) - i64::from(out_w))
}

/// Output rows per parallel task in the single-pass cases.
const ROWS_PER_TASK: usize = 20;

/// Only the width changes: the horizontal pass from the image straight into `out`.
fn horizontal_only(kernel: Kernel, image: &RgbImage, horiz: &PairedTaps, out: &mut [u8]) {
    let (in_w, out_stride) = (image.width() as usize, horiz.outputs() * 3);
    let rows_per_task = ROWS_PER_TASK.div_ceil(kernel.tile_rows()) * kernel.tile_rows();
    out.par_chunks_mut(out_stride * rows_per_task).enumerate().for_each_init(Vec::new, |columns, (task, chunk)| {
        let rows = chunk.len() / out_stride;
        let src = &image.data()[task * rows_per_task * in_w * 3..][..rows * in_w * 3];
        kernel.horizontal_rows(src, in_w, horiz, columns, chunk);
    });
}

/// Only the height changes: the vertical pass from the image straight into `out`.
fn vertical_only(kernel: Kernel, image: &RgbImage, vert: &PairedTaps, out: &mut [u8]) {
    let row_len = image.width() as usize * 3;
    out.par_chunks_mut(row_len * ROWS_PER_TASK).enumerate().for_each_init(Vec::new, |offsets, (task, chunk)| {
        for (i, out_row) in chunk.chunks_exact_mut(row_len).enumerate() {
            let y = task * ROWS_PER_TASK + i;
            offsets.clear();
            offsets.extend((vert.start(y)..vert.start(y) + vert.len(y)).map(|row| row * row_len));
            kernel.vertical_row(image.data(), offsets, y, vert, out_row);
        }
    });
}

/// Vertical pass first (Pillow 13's order when the height shrinks much more than the width):
/// each task computes a tile of full-width vertical rows, then their horizontal pass into `out`.
fn vertical_then_horizontal(kernel: Kernel, image: &RgbImage, horiz: &PairedTaps, vert: &PairedTaps, out: &mut [u8]) {
    let (in_w, out_stride) = (image.width() as usize, horiz.outputs() * 3);
    let in_row = in_w * 3;
    let tile = kernel.tile_rows();
    let scratch = || (Vec::new(), Vec::new(), Vec::new());
    out.par_chunks_mut(out_stride * tile).enumerate().for_each_init(
        scratch,
        |(rows, offsets, columns), (task, chunk)| {
            let n = chunk.len() / out_stride;
            rows.resize(n * in_row, 0);
            for (i, row) in rows.chunks_exact_mut(in_row).enumerate() {
                let y = task * tile + i;
                offsets.clear();
                offsets.extend((vert.start(y)..vert.start(y) + vert.len(y)).map(|r| r * in_row));
                kernel.vertical_row(image.data(), offsets, y, vert, row);
            }
            kernel.horizontal_rows(rows, in_w, horiz, columns, chunk);
        },
    );
}

/// Horizontal pass first, over the source rows the vertical pass reads. The output rows are
/// split into one contiguous band per worker (a few per worker when there are several, for
/// balance); a band computes its horizontal rows in order, a tile at a time, into a ring just
/// large enough for the taps of one output row, and emits each output row as soon as its taps
/// are there. Rows where two bands' taps overlap are computed by both.
fn horizontal_then_vertical(kernel: Kernel, image: &RgbImage, horiz: &PairedTaps, vert: &PairedTaps, out: &mut [u8]) {
    let (in_w, out_stride) = (image.width() as usize, horiz.outputs() * 3);
    let in_row = in_w * 3;
    let out_h = vert.outputs();
    let threads = rayon::current_num_threads().max(1);
    let bands = if threads == 1 { 1 } else { (threads * 4).min(out_h.div_ceil(16)).max(1) };
    let band_rows = out_h.div_ceil(bands);
    let tile = kernel.tile_rows();
    out.par_chunks_mut(out_stride * band_rows).enumerate().for_each(|(band, chunk)| {
        let y0 = band * band_rows;
        let y1 = y0 + chunk.len() / out_stride;
        // Source rows of the band: `start` and `start + len` never decrease with the output row.
        let first = vert.start(y0);
        let end = vert.start(y1 - 1) + vert.len(y1 - 1);
        let max_len = (y0..y1).map(|y| vert.len(y)).max().unwrap_or(0);
        // A tile is written while the rows of one output row are live: `max_len + tile` slots
        // suffice; a multiple of the tile keeps every tile contiguous in the ring.
        let slots = (max_len + tile).div_ceil(tile) * tile;
        let mut ring = vec![0u8; slots * out_stride];
        let (mut columns, mut offsets) = (Vec::new(), Vec::new());
        let mut done = first;
        for (i, out_row) in chunk.chunks_exact_mut(out_stride).enumerate() {
            let y = y0 + i;
            let need = vert.start(y) + vert.len(y);
            while done < need {
                let n = tile.min(end - done);
                let slot = (done - first) % slots;
                let src = &image.data()[done * in_row..(done + n) * in_row];
                let dst = &mut ring[slot * out_stride..(slot + n) * out_stride];
                kernel.horizontal_rows(src, in_w, horiz, &mut columns, dst);
                done += n;
            }
            offsets.clear();
            offsets.extend((vert.start(y)..need).map(|row| (row - first) % slots * out_stride));
            kernel.vertical_row(&ring, &offsets, y, vert, out_row);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kernels() -> Vec<Kernel> {
        let mut all = vec![Kernel::Portable];
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = pulp::x86::V3::try_new() {
            all.push(Kernel::Avx2 { simd, narrow: false });
            all.push(Kernel::Avx2 { simd, narrow: true });
        }
        all
    }

    fn image(w: u32, h: u32, seed: u32) -> RgbImage {
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        let data = (0..w as usize * h as usize * 3)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                // Mostly extremes, so the clamps and large sums are exercised.
                match state % 4 {
                    0 => 0,
                    1 => 255,
                    _ => (state >> 8) as u8,
                }
            })
            .collect();
        RgbImage::new(w, h, data).expect("sized buffer")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(120))]

        /// Every kernel, on sizes that cross the kernels' tile and vector widths, in every pass
        /// order and on 1 and several rayon threads' band splits, equals the plain twin.
        #[test]
        fn every_kernel_equals_the_plain_twin(
            iw in 1u32..300, ih in 1u32..120, ow in 1u32..200, oh in 1u32..90, seed in any::<u32>()
        ) {
            let image = image(iw, ih, seed);
            let want = resize_bicubic_reference(&image, ow, oh).expect("reference");
            for kernel in kernels() {
                let got = resize_with(kernel, &image, ow, oh).expect("resize");
                prop_assert!(got == want, "{kernel:?}: {iw}x{ih} -> {ow}x{oh}");
            }
        }
    }

    #[test]
    fn bands_on_one_and_many_threads_agree() {
        let image = image(517, 301, 7);
        for (ow, oh) in [(384, 192), (200, 280), (600, 40), (517, 100), (90, 301)] {
            let want = resize_bicubic_reference(&image, ow, oh).expect("reference");
            for threads in [1, 2, 3] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
                for kernel in kernels() {
                    let got = pool.install(|| resize_with(kernel, &image, ow, oh)).expect("resize");
                    assert!(got == want, "{kernel:?}, {threads} threads: 517x301 -> {ow}x{oh}");
                }
            }
        }
    }
}
