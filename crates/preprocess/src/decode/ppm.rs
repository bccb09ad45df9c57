//! PBM, PGM, PPM, PNM and PFM as Pillow's `PpmImagePlugin` reads them, then `convert("RGB")`.
//!
//! The header is read one byte at a time as `_read_magic` / `_read_token` read it: a magic of
//! up to 6 bytes ended by whitespace, then tokens of at most 10 bytes separated by whitespace,
//! where `#` skips to the end of the line and the token goes on after it. Sizes and maxval
//! are parsed like Python's `int`, the PFM scale like Python's `float`.
//!
//! The pixel data starts right after the byte that ended the last token:
//! - binary P4 (`1;I`), P5/P6 with maxval 255, P5 with maxval 65535 (`I;16B`) and PFM
//!   (`F;32BF`, or `F;32F` for a negative scale; bottom-up rows) use Pillow's raw decoder,
//!   which refuses data shorter than the image;
//! - binary files with another maxval use the `ppm` decoder: each sample (1 byte, or 2
//!   big-endian bytes past 255) becomes `min(out_max, round(v / maxval * out_max))`;
//! - plain P1/P2/P3 use the `ppm_plain` decoder, reproduced block by block (1 MiB blocks,
//!   comments removed per block, the last token of a block carried into the next), with its
//!   errors: a token longer than 10 bytes, a non-integer, a negative or too large value, a
//!   bilevel byte other than `0`/`1`.
//!
//! A gray file with maxval above 255 is mode `I` (scaled to 0..65535), which `convert("RGB")`
//! clips to 0..255; `F` goes through `L` (`f2l`: clipped, truncated). The test-only magics
//! `P0CMYK`, `PyCMYK` (`cmyk2rgb`), `PyRGBA` (alpha dropped) and `PyP` (no palette: black) are read too.

use super::Decoded;
use crate::{Error, Limits, Orientation, Result, RgbImage};

const FORMAT: &str = "PPM";

/// Pillow's `b_whitespace`, also what `bytes.split()` splits on.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// `ImageFile.SAFEBLOCK`, the block size of the plain decoder's reads.
const SAFEBLOCK: usize = 1024 * 1024;

/// The longest token the header and the plain decoder accept.
const MAX_TOKEN: usize = 10;

/// The image mode a magic selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Bilevel,
    L,
    Rgb,
    Cmyk,
    Rgba,
    P,
    F,
}

impl Mode {
    fn from_magic(magic: &[u8]) -> Option<(Mode, bool)> {
        Some(match magic {
            b"P1" => (Mode::Bilevel, true),
            b"P2" => (Mode::L, true),
            b"P3" => (Mode::Rgb, true),
            b"P4" => (Mode::Bilevel, false),
            b"P5" => (Mode::L, false),
            b"P6" => (Mode::Rgb, false),
            b"P0CMYK" | b"PyCMYK" => (Mode::Cmyk, false),
            b"Pf" => (Mode::F, false),
            b"PyP" => (Mode::P, false),
            b"PyRGBA" => (Mode::Rgba, false),
            _ => return None,
        })
    }

    fn bands(self) -> usize {
        match self {
            Mode::Bilevel | Mode::L | Mode::P | Mode::F => 1,
            Mode::Rgb => 3,
            Mode::Cmyk | Mode::Rgba => 4,
        }
    }
}

/// The file read one byte at a time, as the plugin reads its header.
struct Header<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Header<'_> {
    fn next(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    /// `_read_magic`: up to 6 bytes, ended early by whitespace (consumed) or the end.
    fn magic(&mut self) -> Vec<u8> {
        let mut magic = Vec::new();
        for _ in 0..6 {
            match self.next() {
                Some(c) if !is_space(c) => magic.push(c),
                _ => break,
            }
        }
        magic
    }

    /// `_read_token`: skips leading whitespace and `#` comments, stops after the whitespace
    /// byte that ends the token; at most 10 bytes.
    fn token(&mut self) -> Result<Vec<u8>> {
        let mut token = Vec::new();
        while token.len() <= MAX_TOKEN {
            let Some(c) = self.next() else { break };
            if is_space(c) {
                if token.is_empty() {
                    continue;
                }
                break;
            }
            if c == b'#' {
                while let Some(c) = self.next() {
                    if c == b'\r' || c == b'\n' {
                        break;
                    }
                }
                continue;
            }
            token.push(c);
        }
        if token.is_empty() {
            return Err(Error::Truncated { format: FORMAT, detail: "reached EOF while reading header".into() });
        }
        if token.len() > MAX_TOKEN {
            return Err(Error::malformed(FORMAT, format!("token too long in file header: {}", show(&token))));
        }
        Ok(token)
    }
}

fn show(token: &[u8]) -> String {
    String::from_utf8_lossy(token).into_owned()
}

/// Python's `int(token)` for a token of at most 10 bytes (no whitespace): an optional sign,
/// then ASCII digits with single underscores between them.
fn python_int(token: &[u8]) -> Option<i64> {
    let (negative, digits) = match token.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, token),
    };
    if !underscores_between_digits(digits) || digits.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    for &d in digits.iter().filter(|&&d| d != b'_') {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(if negative { -value } else { value })
}

/// Python accepts `_` in numbers only between two digits.
fn underscores_between_digits(text: &[u8]) -> bool {
    text.iter().enumerate().all(|(i, &c)| {
        c != b'_'
            || (i > 0
                && text.get(i - 1).is_some_and(u8::is_ascii_digit)
                && text.get(i + 1).is_some_and(u8::is_ascii_digit))
    })
}

/// Python's `float(token)` for a header token (decimal, exponent, `inf`, `nan`, underscores
/// between digits).
fn python_float(token: &[u8]) -> Option<f64> {
    if !underscores_between_digits(token) {
        return None;
    }
    let text: String = token.iter().filter(|&&c| c != b'_').map(|&c| char::from(c)).collect();
    let lower = text.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    if unsigned.len() + 1 < lower.len() {
        return None;
    }
    if matches!(unsigned, "inf" | "infinity" | "nan") {
        return Some(if lower.starts_with('-') { f64::NEG_INFINITY } else { f64::INFINITY });
    }
    if !unsigned.bytes().all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-')) {
        return None;
    }
    lower.parse().ok()
}

fn header_int(header: &mut Header, what: &str) -> Result<i64> {
    let token = header.token()?;
    python_int(&token).ok_or_else(|| Error::malformed(FORMAT, format!("{what} {:?} is not an integer", show(&token))))
}

/// How the pixel data is stored.
enum Data {
    /// Pillow's raw decoder, which needs the whole image.
    Raw,
    /// P5 with maxval 65535: the raw decoder's `I;16B`.
    Raw16,
    /// The `ppm` decoder for a maxval other than 255 (or 65535 for gray).
    Scaled { maxval: u32 },
    /// The `ppm_plain` decoder of P1, P2 and P3.
    Plain { maxval: u32 },
    /// PFM: 32-bit floats, little-endian when the scale is negative, bottom-up rows.
    Float { little_endian: bool },
}

/// Decodes the image; the size is checked against `limits` before any pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let mut header = Header { bytes, pos: 0 };
    let magic = header.magic();
    let (mode, is_plain) = Mode::from_magic(&magic)
        .ok_or_else(|| Error::malformed(FORMAT, format!("not a PPM file: {}", show(&magic))))?;
    let width = header_int(&mut header, "width")?;
    let height = header_int(&mut header, "height")?;
    if width <= 0 || height <= 0 {
        return Err(Error::malformed(FORMAT, format!("size {width}x{height} is not positive")));
    }
    let data = match mode {
        Mode::Bilevel => {
            if is_plain {
                Data::Plain { maxval: 1 }
            } else {
                Data::Raw
            }
        }
        Mode::F => {
            let token = header.token()?;
            let scale = python_float(&token)
                .ok_or_else(|| Error::malformed(FORMAT, format!("scale {:?} is not a number", show(&token))))?;
            if scale == 0.0 || !scale.is_finite() {
                return Err(Error::malformed(FORMAT, "scale must be finite and non-zero"));
            }
            Data::Float { little_endian: scale < 0.0 }
        }
        _ => {
            let maxval = header_int(&mut header, "maxval")?;
            if !(1..65536).contains(&maxval) {
                return Err(Error::malformed(FORMAT, "maxval must be greater than 0 and less than 65536"));
            }
            let maxval = maxval as u32;
            if is_plain {
                Data::Plain { maxval }
            } else if maxval == 255 {
                Data::Raw
            } else if maxval == 65535 && mode == Mode::L {
                Data::Raw16
            } else {
                Data::Scaled { maxval }
            }
        }
    };
    limits.check(width as u64, height as u64)?;
    let (w, h) = (width as usize, height as usize);
    let body = bytes.get(header.pos..).unwrap_or_default();
    let samples = match data {
        Data::Float { little_endian } => return float(body, little_endian, w, h),
        Data::Raw => raw(body, mode, w, h)?,
        Data::Raw16 => raw16(body, w, h)?,
        Data::Scaled { maxval } => scaled(body, mode, maxval, w, h)?,
        Data::Plain { .. } if mode == Mode::Bilevel => plain_bilevel(body, w * h)?,
        Data::Plain { maxval } => plain(body, mode, maxval, w * h)?,
    };
    let rgb = to_rgb(&samples, mode);
    Ok(Decoded { image: RgbImage::from_parts(w as u32, h as u32, rgb), orientation: Orientation::Normal })
}

fn truncated() -> Error {
    Error::Truncated { format: FORMAT, detail: "image file is truncated".into() }
}

fn not_enough_data() -> Error {
    Error::Truncated { format: FORMAT, detail: "not enough image data".into() }
}

/// The output of mode `I` (gray with maxval above 255) as `convert("RGB")` sees it:
/// `i2rgb` clips to 0..255.
fn clip_i(value: u32) -> u8 {
    value.min(255) as u8
}

/// Pillow's raw decoder: P4 (`1;I`: a set bit is black, rows padded to bytes; 0/255 out) or
/// 8-bit samples. Data shorter than the image is an error.
fn raw(body: &[u8], mode: Mode, w: usize, h: usize) -> Result<Vec<u8>> {
    if mode == Mode::Bilevel {
        let stride = w.div_ceil(8);
        let body = body.get(..stride * h).ok_or_else(truncated)?;
        let mut out = Vec::with_capacity(w * h);
        for row in body.chunks_exact(stride) {
            out.extend(
                (0..w).map(|x| if row.get(x / 8).is_some_and(|b| (b >> (7 - x % 8)) & 1 == 1) { 0 } else { 255 }),
            );
        }
        return Ok(out);
    }
    Ok(body.get(..w * h * mode.bands()).ok_or_else(truncated)?.to_vec())
}

/// P5 with maxval 65535: big-endian 16-bit gray (`I;16B` into mode `I`), clipped to 0..255.
fn raw16(body: &[u8], w: usize, h: usize) -> Result<Vec<u8>> {
    let body = body.get(..w * h * 2).ok_or_else(truncated)?;
    Ok(body.chunks_exact(2).map(|s| clip_i(u32::from(u16::from_be_bytes([s[0], s[1]])))).collect())
}

/// Python's `round(value / maxval * out_max)` (float division, ties to even).
fn rescale(value: u32, maxval: u32, out_max: u32) -> u32 {
    (f64::from(value) / f64::from(maxval) * f64::from(out_max)).round_ties_even() as u32
}

/// `PpmDecoder`: samples of 1 byte (maxval below 256) or 2 big-endian bytes, each
/// `min(out_max, round(v / maxval * out_max))` with `out_max` 65535 for mode `I`, else 255.
/// It reads whole pixels until the image is full or the data ends; fewer than the image
/// needs is "not enough image data".
fn scaled(body: &[u8], mode: Mode, maxval: u32, w: usize, h: usize) -> Result<Vec<u8>> {
    let bands = mode.bands();
    let in_bytes = if maxval < 256 { 1 } else { 2 };
    let wide = mode == Mode::L && maxval > 255;
    let out_max = if wide { 65535 } else { 255 };
    let pixel_bytes = in_bytes * bands;
    let body = body.get(..w * h * pixel_bytes).ok_or_else(not_enough_data)?;
    let sample = |s: &[u8]| -> u8 {
        let v = if in_bytes == 1 { u32::from(s[0]) } else { u32::from(u16::from_be_bytes([s[0], s[1]])) };
        clip_i(rescale(v, maxval, out_max).min(out_max))
    };
    Ok(body.chunks_exact(in_bytes).map(sample).collect())
}

/// `PpmPlainDecoder._ignore_comments`: drops `#` to the next CR or LF (inclusive) within a
/// block; a comment still open at the block's end is dropped from the start of the next.
struct CommentStripper {
    spans: bool,
}

/// `_find_comment_end`: the first CR or LF at or after `start`, with the plugin's choice when
/// only one of them is at index 0.
fn comment_end(block: &[u8], start: usize) -> Option<usize> {
    let find = |c: u8| block.get(start..).and_then(|t| t.iter().position(|&b| b == c)).map(|i| i + start);
    let (a, b) = (find(b'\n').map_or(-1, |i| i as i64), find(b'\r').map_or(-1, |i| i as i64));
    let end = if a * b > 0 { a.min(b) } else { a.max(b) };
    usize::try_from(end).ok()
}

impl CommentStripper {
    fn strip(&mut self, mut block: Vec<u8>, blocks: &mut Blocks) -> Vec<u8> {
        if self.spans {
            while !block.is_empty() {
                if let Some(end) = comment_end(&block, 0) {
                    block.drain(..=end);
                    break;
                }
                block = blocks.next_block();
            }
        }
        self.spans = false;
        while let Some(start) = block.iter().position(|&b| b == b'#') {
            match comment_end(&block, start) {
                Some(end) => {
                    block.drain(start..=end);
                }
                None => {
                    block.truncate(start);
                    self.spans = true;
                    break;
                }
            }
        }
        block
    }
}

/// The plain decoder's reads of [`SAFEBLOCK`] bytes.
struct Blocks<'a> {
    rest: &'a [u8],
}

impl Blocks<'_> {
    fn next_block(&mut self) -> Vec<u8> {
        let n = self.rest.len().min(SAFEBLOCK);
        let (block, rest) = self.rest.split_at(n);
        self.rest = rest;
        block.to_vec()
    }
}

/// `_decode_bitonal`: every non-whitespace byte of a block (comments removed) must be `0`
/// (white) or `1` (black), whitespace between them optional; blocks are read until the image
/// is full.
fn plain_bilevel(body: &[u8], total: usize) -> Result<Vec<u8>> {
    let mut blocks = Blocks { rest: body };
    let mut comments = CommentStripper { spans: false };
    let mut data = Vec::new();
    while data.len() != total {
        let block = blocks.next_block();
        if block.is_empty() {
            break;
        }
        let block = comments.strip(block, &mut blocks);
        let tokens: Vec<u8> = block.into_iter().filter(|&b| !is_space(b)).collect();
        if let Some(&bad) = tokens.iter().find(|&&t| t != b'0' && t != b'1') {
            return Err(Error::malformed(FORMAT, format!("invalid token for this mode: {}", show(&[bad]))));
        }
        data.extend(tokens.iter().take(total - data.len()).map(|&t| if t == b'0' { 255 } else { 0 }));
    }
    if data.len() != total {
        return Err(not_enough_data());
    }
    Ok(data)
}

/// `_decode_blocks`: whitespace-separated decimal tokens, a token cut by a block's end carried
/// into the next, each checked (at most 10 bytes, an integer, `0..=maxval`) and scaled to
/// `round(v / maxval * out_max)`.
fn plain(body: &[u8], mode: Mode, maxval: u32, pixels: usize) -> Result<Vec<u8>> {
    let total = pixels * mode.bands();
    let wide = mode == Mode::L && maxval > 255;
    let out_max = if wide { 65535 } else { 255 };
    let too_long = |token: &[u8]| {
        let shown = token.get(..MAX_TOKEN + 1).unwrap_or(token);
        Error::malformed(FORMAT, format!("token too long found in data: {}", show(shown)))
    };
    let mut blocks = Blocks { rest: body };
    let mut comments = CommentStripper { spans: false };
    let mut data = Vec::new();
    let mut half_token: Vec<u8> = Vec::new();
    while data.len() != total {
        let mut block = blocks.next_block();
        if block.is_empty() {
            if half_token.is_empty() {
                break;
            }
            block = vec![b' '];
        }
        let mut block = comments.strip(block, &mut blocks);
        if !half_token.is_empty() {
            half_token.append(&mut block);
            block = std::mem::take(&mut half_token);
        }
        let mut tokens: Vec<&[u8]> = block.split(|&b| is_space(b)).filter(|t| !t.is_empty()).collect();
        if block.last().is_some_and(|&b| !is_space(b)) {
            half_token = tokens.pop().unwrap_or_default().to_vec();
            if half_token.len() > MAX_TOKEN {
                return Err(too_long(&half_token));
            }
        }
        for token in tokens {
            if token.len() > MAX_TOKEN {
                return Err(too_long(token));
            }
            let value = python_int(token)
                .ok_or_else(|| Error::malformed(FORMAT, format!("invalid literal for int(): {}", show(token))))?;
            if value < 0 {
                return Err(Error::malformed(FORMAT, format!("channel value is negative: {value}")));
            }
            if value > i64::from(maxval) {
                return Err(Error::malformed(FORMAT, format!("channel value too large for this mode: {value}")));
            }
            data.push(clip_i(rescale(value as u32, maxval, out_max)));
            if data.len() == total {
                break;
            }
        }
    }
    if data.len() != total {
        return Err(not_enough_data());
    }
    Ok(data)
}

/// PFM through Pillow's raw decoder (rows bottom-up) and `convert("RGB")` via `L` (`f2l`:
/// `v <= 0` -> 0, `v >= 255` -> 255, else truncated; NaN -> 0).
fn float(body: &[u8], little_endian: bool, w: usize, h: usize) -> Result<Decoded> {
    let body = body.get(..w * h * 4).ok_or_else(truncated)?;
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    for (row, out) in body.chunks_exact(w * 4).rev().zip(rgb.chunks_exact_mut(w * 3)) {
        for (s, px) in row.chunks_exact(4).zip(out.chunks_exact_mut(3)) {
            let bits = [s[0], s[1], s[2], s[3]];
            let v = if little_endian { f32::from_le_bytes(bits) } else { f32::from_be_bytes(bits) };
            let gray = if v <= 0.0 {
                0
            } else if v >= 255.0 {
                255
            } else {
                v as u8
            };
            px.fill(gray);
        }
    }
    Ok(Decoded { image: RgbImage::from_parts(w as u32, h as u32, rgb), orientation: Orientation::Normal })
}

/// `convert("RGB")` of the decoded samples: gray (bilevel already 0/255) replicated, RGB as is,
/// RGBA without its alpha, CMYK through `cmyk2rgb`, `P` (no palette in the file) black.
fn to_rgb(samples: &[u8], mode: Mode) -> Vec<u8> {
    let bands = mode.bands();
    let mut rgb = crate::buffer_pool::take(samples.len() / bands * 3);
    for (px, out) in samples.chunks_exact(bands).zip(rgb.chunks_exact_mut(3)) {
        match mode {
            Mode::Bilevel | Mode::L | Mode::F => out.fill(px[0]),
            // A `P` image without a palette: libImaging's empty palette is all black.
            Mode::P => out.fill(0),
            Mode::Rgb | Mode::Rgba => out.copy_from_slice(&px[..3]),
            Mode::Cmyk => {
                let nk = 255 - i32::from(px[3]);
                for (o, &c) in out.iter_mut().zip(&px[..3]) {
                    *o = (nk - muldiv255(i32::from(c), nk)).clamp(0, 255) as u8;
                }
            }
        }
    }
    rgb
}

/// `MULDIV255`: `a * b / 255` rounded as libImaging rounds it.
fn muldiv255(a: i32, b: i32) -> i32 {
    let t = a * b + 128;
    ((t >> 8) + t) >> 8
}
