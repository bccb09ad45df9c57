//! An animation's first frame on its canvas, as Pillow 13 gets it from libwebp 1.6's
//! `WebPAnimDecoder` (`src/demux/anim_decode.c`, decoder made with `WebPAnimDecoderNew(data,
//! NULL)`: `MODE_RGBA`, not premultiplied) and then converts it to RGB.
//!
//! - The first frame is always a key frame (`IsKeyFrame`: `frame_num == 1`), so the canvas
//!   starts fully transparent black (`ZeroFillCanvas`); the `ANIM` background colour is
//!   reported to Pillow (`info["background"]`) but never painted.
//! - The frame is decoded straight into the canvas at its offset (`WebPDecode` into the
//!   canvas with the canvas's stride): its pixels replace the canvas's, alpha included. Blending
//!   is only for frames after the first (`iter.frame_num > 1 && blend_method == WEBP_MUX_BLEND
//!   && !is_key_frame`), and disposal acts only on the canvas the next frame starts from, so
//!   the first frame's blend and dispose bits change nothing.
//! - Pillow's mode is RGBA, or RGB (raw mode RGBX) when the VP8X alpha flag is clear; either
//!   way `convert("RGB")` keeps R, G, B and drops A, never compositing it.
//!
//! So the RGB result is black outside the frame's rectangle and the frame's own decoded RGB
//! inside it. The frame is decoded by the still-image path from a still WebP holding its
//! chunks (`VP8 `, `VP8L`, or `VP8X` + `ALPH` + `VP8 `): libwebp decodes the same chunks, and
//! the alpha plane, which does not touch the RGB of a non-premultiplied decode, is still
//! decoded so that a broken one refuses the file as it does in Pillow.

use super::container::{Animation, Frame};
use super::still;
use crate::buffer_pool;
use crate::{Error, Limits, Result, RgbImage};

/// The RGB image of `animation`'s first frame on its canvas (the canvas has passed `limits`).
pub(super) fn decode(animation: &Animation<'_>, limits: &Limits) -> Result<RgbImage> {
    let frame = &animation.first_frame;
    let pixels = still::decode(&still_file(frame)?, limits)?.image;
    if (pixels.width(), pixels.height()) != (frame.size.width, frame.size.height) {
        return Err(Error::malformed(
            "WEBP",
            format!(
                "frame 1 decoded to {}x{}, its header says {}x{}",
                pixels.width(),
                pixels.height(),
                frame.size.width,
                frame.size.height
            ),
        ));
    }
    let (canvas_width, canvas_height) = (animation.canvas_width, animation.canvas_height);
    if (frame.x, frame.y, frame.size.width, frame.size.height) == (0, 0, canvas_width, canvas_height) {
        return Ok(pixels);
    }
    let canvas_row = canvas_width as usize * 3;
    let mut canvas = buffer_pool::take(canvas_row * canvas_height as usize);
    canvas.fill(0);
    let frame_row = frame.size.width as usize * 3;
    let left = frame.x as usize * 3;
    for (y, row) in pixels.data().chunks_exact(frame_row).enumerate() {
        let at = (frame.y as usize + y) * canvas_row + left;
        canvas[at..at + frame_row].copy_from_slice(row);
    }
    RgbImage::new(canvas_width, canvas_height, canvas)
}

/// A still WebP file of `frame`'s image chunks alone: `RIFF` + `VP8 ` or `VP8L` when the
/// frame has no `ALPH` chunk, else `RIFF` + `VP8X` (alpha flag, the frame's size) + `ALPH` +
/// the image chunk. The chunks are copied whole, padding included.
fn still_file(frame: &Frame<'_>) -> Result<Vec<u8>> {
    let vp8x = frame.alpha.map(|_| {
        let mut chunk = Vec::with_capacity(18);
        chunk.extend_from_slice(b"VP8X");
        chunk.extend_from_slice(&10u32.to_le_bytes());
        chunk.extend_from_slice(&[0x10, 0, 0, 0]);
        chunk.extend_from_slice(&(frame.size.width - 1).to_le_bytes()[..3]);
        chunk.extend_from_slice(&(frame.size.height - 1).to_le_bytes()[..3]);
        chunk
    });
    let chunks = [vp8x.as_deref().unwrap_or_default(), frame.alpha.unwrap_or_default(), frame.image];
    let riff_size = 4 + chunks.iter().map(|c| c.len()).sum::<usize>();
    let riff_size_field = u32::try_from(riff_size)
        .map_err(|_| Error::malformed("WEBP", format!("frame 1 of {riff_size} bytes does not fit a RIFF chunk")))?;
    let mut file = Vec::with_capacity(riff_size + 8);
    file.extend_from_slice(b"RIFF");
    file.extend_from_slice(&riff_size_field.to_le_bytes());
    file.extend_from_slice(b"WEBP");
    for chunk in chunks {
        file.extend_from_slice(chunk);
    }
    Ok(file)
}
