//! WebP, as Pillow 13's `WebPImagePlugin` reads it through libwebp 1.6's `WebPAnimDecoder`.
//!
//! A still image (`VP8 `, `VP8L`, or `VP8X` without the animation flag) goes through the
//! `image` crate (`still.rs`). An animation (`VP8X` with the animation flag) is demuxed as
//! libwebp's demuxer does (`container.rs`, with each frame's bitstream header checked in
//! `frame_header.rs`), and its first frame is placed on its canvas as `WebPAnimDecoder` places
//! it (`first_frame.rs`).

mod container;
mod first_frame;
mod frame_header;
mod still;

use super::Decoded;
use crate::{Limits, Orientation, Result};

/// Decodes the first frame; the canvas (or the still image's header) is checked against
/// `limits` before any pixel buffer exists. The orientation is the EXIF chunk's, else the XMP
/// chunk's `tiff:Orientation`, as Pillow's `getexif` reads them.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    if !container::is_animation(bytes) {
        return still::decode(bytes, limits);
    }
    let animation = container::parse(bytes, limits)?;
    let image = first_frame::decode(&animation, limits)?;
    Ok(Decoded { image, orientation: Orientation::from_exif_or_xmp(animation.exif, animation.xmp) })
}
