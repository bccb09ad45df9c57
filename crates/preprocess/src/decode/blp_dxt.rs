//! The DXT decoders of Pillow's `BlpImagePlugin` (its own Python, not `BcnDecode.c`), and the
//! raw decoder's reading of what they make.
//!
//! Endpoints are 565 colours widened by shifting alone (`r << 3`, `g << 2`, `b << 3`, no
//! repeated top bits, unlike `bcn.rs`); the third and fourth colours are `(2a + b) // 3` and
//! `(a + 2b) // 3`. DXT1 uses them when the first endpoint is the greater, else `(a + b) // 2`
//! and transparent black; DXT3 and DXT5 always. DXT3 alpha is a nibble times 17; DXT5 alpha
//! is BC3's (`bcn.rs`). DXT1 gives RGB pixels, or RGBA with the alpha flag; DXT3 and DXT5
//! always RGBA.
//!
//! Each row of blocks becomes four rows of `ceil(w / 4) * 4` pixels, and the rows follow one
//! another; the raw decoder then reads that stream as rows of the image's width (wider rows
//! spill over into the next ones) at four bytes a pixel in RGBA mode and three in RGB (a DXT3
//! or DXT5 stream in RGB mode is read three bytes at a time, alpha bytes among the colours).

use super::bcn::bc3_alpha;

/// A DXT flavour, as the BLP2 header's alpha encoding (and alpha flag) selects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dxt {
    /// Alpha encoding 0; `alpha` is the header's alpha flag (RGBA output when set).
    Dxt1 { alpha: bool },
    /// Alpha encoding 1.
    Dxt3,
    /// Alpha encoding 7.
    Dxt5,
}

impl Dxt {
    pub(super) fn block_bytes(self) -> usize {
        match self {
            Dxt::Dxt1 { .. } => 8,
            Dxt::Dxt3 | Dxt::Dxt5 => 16,
        }
    }

    /// Bytes per pixel of the decoded stream.
    fn channels(self) -> usize {
        match self {
            Dxt::Dxt1 { alpha: false } => 3,
            _ => 4,
        }
    }
}

/// `unpack_565`: the channels shifted into place, low bits zero.
fn unpack_565(c: u16) -> [u16; 3] {
    [(c >> 11 & 0x1F) << 3, (c >> 5 & 0x3F) << 2, (c & 0x1F) << 3]
}

/// The RGBA of a block's 16 texels from its 8 colour bytes; `dxt1` allows the three-colour
/// mode.
fn colors(block: &[u8], dxt1: bool) -> [[u8; 4]; 16] {
    let c0 = u16::from_le_bytes([block[0], block[1]]);
    let c1 = u16::from_le_bytes([block[2], block[3]]);
    let (a, b) = (unpack_565(c0), unpack_565(c1));
    let mix = |f: fn(u16, u16) -> u16| [f(a[0], b[0]) as u8, f(a[1], b[1]) as u8, f(a[2], b[2]) as u8, 255];
    let palette = if c0 > c1 || !dxt1 {
        [mix(|a, _| a), mix(|_, b| b), mix(|a, b| (2 * a + b) / 3), mix(|a, b| (2 * b + a) / 3)]
    } else {
        [mix(|a, _| a), mix(|_, b| b), mix(|a, b| (a + b) / 2), [0; 4]]
    };
    let code = u32::from_le_bytes([block[4], block[5], block[6], block[7]]);
    std::array::from_fn(|n| palette[(code >> (2 * n) & 3) as usize])
}

/// The RGBA of a block's 16 texels, row-major.
fn texels(dxt: Dxt, block: &[u8]) -> [[u8; 4]; 16] {
    match dxt {
        Dxt::Dxt1 { .. } => colors(block, true),
        Dxt::Dxt3 => {
            let mut out = colors(&block[8..], false);
            for (n, texel) in out.iter_mut().enumerate() {
                texel[3] = (block[n / 2] >> (4 * (n % 2)) & 0xF) * 17;
            }
            out
        }
        Dxt::Dxt5 => {
            let mut out = colors(&block[8..], false);
            for (texel, a) in out.iter_mut().zip(bc3_alpha(block, false)) {
                texel[3] = a;
            }
            out
        }
    }
}

/// The RGB image (`w * h * 3` bytes) the raw decoder makes of the decoded stream of `data`,
/// which holds exactly `ceil(h / 4)` rows of `ceil(w / 4)` blocks; `rgba_mode` is the image's
/// mode (the header's alpha flag).
pub(super) fn dxt_rgb(data: &[u8], dxt: Dxt, rgba_mode: bool, w: usize, h: usize) -> Vec<u8> {
    let across = w.div_ceil(4);
    let channels = dxt.channels();
    let row_pixels = across * 4;
    // Bytes of the stream the raw decoder reads: never more than the stream holds, as
    // `channels` is at least the mode's bytes per pixel.
    let wanted = w * h * if rgba_mode { 4 } else { 3 };
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    let (mut seen, mut written) = (0usize, 0usize);
    let mut rows = vec![0u8; 4 * row_pixels * channels];
    for block_row in data.chunks_exact(across * dxt.block_bytes()) {
        for (bx, block) in block_row.chunks_exact(dxt.block_bytes()).enumerate() {
            for (n, texel) in texels(dxt, block).iter().enumerate() {
                let at = ((n / 4) * row_pixels + bx * 4 + n % 4) * channels;
                rows[at..at + channels].copy_from_slice(&texel[..channels]);
            }
        }
        for &byte in &rows {
            if seen == wanted {
                return rgb;
            }
            if !rgba_mode || seen % 4 != 3 {
                rgb[written] = byte;
                written += 1;
            }
            seen += 1;
        }
    }
    rgb
}
