//! The ColorMap of palette TIFFs (`P`, `PA`) as Pillow's `ImagePalette.raw("RGB;L", …)` holds it.

use super::ifd::Ifd;
use super::malformed;
use super::mode::Pixel;
use super::tags::COLOR_MAP;
use crate::Result;

/// Pillow's palette for `P`/`PA`: ColorMap values `// 256`, all reds, then greens, then blues.
pub fn of(ifd: &Ifd<'_>, pixel: Pixel) -> Result<[[u8; 3]; 256]> {
    let mut palette = [[0u8; 3]; 256];
    if !matches!(pixel, Pixel::Palette { .. }) {
        return Ok(palette);
    }
    let map = ifd.ints(COLOR_MAP).ok_or_else(|| malformed("palette image without ColorMap"))?;
    let n = map.len() / 3;
    for (i, entry) in palette.iter_mut().enumerate().take(n) {
        for (c, v) in entry.iter_mut().enumerate() {
            *v = map.get(c * n + i).map_or(0, |&m| (m / 256) as u8);
        }
    }
    Ok(palette)
}
