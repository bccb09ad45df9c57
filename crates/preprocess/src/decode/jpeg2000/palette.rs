//! The palette of a JP2 `pclr` box as Pillow 13 keeps it, and the colours its indices stand for.
//!
//! - [`Palette::from_entries`]: `Jpeg2KImagePlugin` makes an `ImagePalette` of the box's mode
//!   (`RGB`, or `RGBA`/`CMYK` for 4 columns) and calls `getcolor` on each entry in order. A
//!   colour already held is not added again, so duplicate entries shift the ones after them;
//!   a new colour goes at `len(palette) // len(mode)` (written over the bytes there, or
//!   appended), which for entries shorter than the mode (1 or 2 columns) overlaps earlier ones;
//!   an index of 256 raises `ValueError` ("cannot allocate more than 256 colors").
//! - [`Palette::colours`]: `Image.load` hands the bytes to `putpalette` in the same raw mode:
//!   256 entries of 4 bytes, `0 0 0 255` where the bytes give none, at most 256 given.
//!
//! `convert("RGB")` of a `P` or `PA` image then reads the first three bytes of the entry at
//! each index, whatever the palette's mode (a `CMYK` entry gives its `C M Y`).

use super::FORMAT;
use crate::{Error, Result};
use std::collections::HashMap;

/// `ImagePalette.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PaletteMode {
    Rgb,
    Rgba,
    Cmyk,
}

impl PaletteMode {
    /// `len(mode)`: bytes per entry.
    fn len(self) -> usize {
        match self {
            PaletteMode::Rgb => 3,
            PaletteMode::Rgba | PaletteMode::Cmyk => 4,
        }
    }
}

/// An `ImagePalette` after the plugin's `getcolor` calls: its mode and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Palette {
    pub mode: PaletteMode,
    bytes: Vec<u8>,
}

impl Palette {
    /// `ImagePalette(mode)`, then `getcolor(tuple(entry))` for each entry in order. Every entry
    /// has the box's column count (1 to 255 bytes).
    pub fn from_entries<'a>(mode: PaletteMode, entries: impl IntoIterator<Item = &'a [u8]>) -> Result<Palette> {
        let mode_len = mode.len();
        let mut bytes: Vec<u8> = Vec::new();
        // `ImagePalette.colors`, rebuilt from the bytes when `None` (`_colors = None`).
        let mut colors: Option<HashMap<Vec<u8>, usize>> = None;
        for color in entries {
            if colors.get_or_insert_with(|| colors_of(&bytes, mode_len)).contains_key(color) {
                continue;
            }
            let index = bytes.len() / mode_len;
            if index >= 256 {
                return Err(Error::malformed(FORMAT, "cannot allocate more than 256 colors"));
            }
            let at = index * mode_len;
            if at < bytes.len() {
                // `palette[:at] + color + palette[at + mode_len:]`.
                let rest = bytes.get(at + mode_len..).unwrap_or(&[]).to_vec();
                bytes.truncate(at);
                bytes.extend_from_slice(color);
                bytes.extend_from_slice(&rest);
                colors = None;
            } else {
                bytes.extend_from_slice(color);
            }
            colors.get_or_insert_with(|| colors_of(&bytes, mode_len)).insert(color.to_vec(), index);
        }
        Ok(Palette { mode, bytes })
    }

    /// The image's palette after `putpalette(mode, mode, bytes)`: 256 entries of 4 bytes, the
    /// first `len(bytes) · 8 / bits` unpacked from the bytes (`RGB` as `R G B 255`), the rest
    /// `0 0 0 255`. More than 256 given raise `ValueError` ("invalid palette size").
    pub fn colours(&self) -> Result<[[u8; 4]; 256]> {
        let given = self.bytes.len() / self.mode.len();
        if given > 256 {
            return Err(Error::malformed(FORMAT, "invalid palette size"));
        }
        let mut entries = [[0, 0, 0, 255]; 256];
        for (entry, bytes) in entries.iter_mut().zip(self.bytes.chunks_exact(self.mode.len())) {
            entry[..bytes.len()].copy_from_slice(bytes);
        }
        Ok(entries)
    }
}

/// `ImagePalette.colors` built from the bytes: each `mode_len` bytes (the last may be short)
/// to the first index that holds them.
fn colors_of(bytes: &[u8], mode_len: usize) -> HashMap<Vec<u8>, usize> {
    let mut colors = HashMap::new();
    for (i, color) in bytes.chunks(mode_len).enumerate() {
        colors.entry(color.to_vec()).or_insert(i);
    }
    colors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_dropped_and_later_entries_move_up() {
        let entries: [&[u8]; 4] = [&[1, 2, 3], &[4, 5, 6], &[1, 2, 3], &[7, 8, 9]];
        let palette = Palette::from_entries(PaletteMode::Rgb, entries).expect("palette");
        let colours = palette.colours().expect("colours");
        assert_eq!(&colours[..4], &[[1, 2, 3, 255], [4, 5, 6, 255], [7, 8, 9, 255], [0, 0, 0, 255]]);
    }

    #[test]
    fn one_column_entries_overwrite_each_other_as_pillow_indexes_them() {
        // index = len // 3 stays 0: each new colour replaces `bytes[0..3]`, which the one
        // before only partly filled, so one byte is left, and no whole entry.
        let entries: [&[u8]; 4] = [&[10], &[20], &[30], &[40]];
        let palette = Palette::from_entries(PaletteMode::Rgb, entries).expect("palette");
        assert_eq!(palette.bytes, [40]);
        assert_eq!(palette.colours().expect("colours")[0], [0, 0, 0, 255]);
    }

    #[test]
    fn a_257th_colour_is_refused() {
        let entries: Vec<[u8; 3]> = (0..257u32).map(|i| [i as u8, (i >> 8) as u8, 0]).collect();
        let error = Palette::from_entries(PaletteMode::Rgb, entries.iter().map(|e| &e[..])).expect_err("257");
        assert!(error.to_string().contains("256 colors"), "{error}");
        let palette = Palette::from_entries(PaletteMode::Rgb, entries[..256].iter().map(|e| &e[..])).expect("256");
        assert_eq!(palette.colours().expect("colours")[255], [255, 0, 0, 255]);
    }

    #[test]
    fn four_column_entries_keep_their_fourth_byte() {
        let entries: [&[u8]; 2] = [&[1, 2, 3, 4], &[5, 6, 7, 8]];
        let palette = Palette::from_entries(PaletteMode::Cmyk, entries).expect("palette");
        assert_eq!(&palette.colours().expect("colours")[..2], &[[1, 2, 3, 4], [5, 6, 7, 8]]);
    }
}
