//! `Jpeg2KImagePlugin._open` (Pillow 13): the codec, size and mode Pillow gives a file before
//! OpenJPEG sees it. A raw codestream (`FF 4F FF 51`) takes both from its SIZ segment; a JP2
//! file from the `ihdr`, `colr` and `pclr` boxes of its `jp2h` box, walked by `BoxReader` with
//! its checks (and its quirks: a box of length 0 is refused, a short read raises), then its
//! codestream's SIZ and COM segments are parsed for their errors only.
//!
//! Every way the plugin raises (`SyntaxError`, `ValueError`, `OSError`, `struct.error`,
//! `IndexError`) is a refusal here, [`Error::Malformed`] with Python's message; the size is
//! Pillow's `Image.size` (which the pixels must fill, whatever the codestream says).

use super::FORMAT;
use super::palette::{Palette, PaletteMode};
use crate::decode::bytes::be16;
use crate::{Error, Result};

/// Which OpenJPEG codec Pillow opens the file with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Codec {
    /// A raw codestream (`OPJ_CODEC_J2K`).
    J2k,
    /// A JP2 (or JPX) file (`OPJ_CODEC_JP2`).
    Jp2,
}

/// Pillow's image mode for the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    L,
    /// `I;16`: 16-bit gray, little-endian words.
    I16,
    La,
    Rgb,
    Rgba,
    Cmyk,
    /// A palette image (`pclr` box of at most 8-bit entries).
    P,
    Pa,
}

/// What `_open` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Header {
    pub codec: Codec,
    pub width: i64,
    pub height: i64,
    pub mode: Mode,
    /// The palette of a `P` or `PA` image.
    pub palette: Option<Palette>,
}

const JP2_SIGNATURE: &[u8] = b"\x00\x00\x00\x0cjP  \x0d\x0a\x87\x0a";

/// `Jpeg2KImageFile._open` on `bytes`.
pub(super) fn parse(bytes: &[u8]) -> Result<Header> {
    let mut fp = File { bytes, pos: 0 };
    let (codec, (width, height), mode, palette) = if fp.read(4) == b"\xff\x4f\xff\x51" {
        let (size, mode) = parse_codestream(&mut fp)?;
        parse_comment(&mut fp)?;
        (Codec::J2k, size, mode, None)
    } else if bytes.starts_with(JP2_SIGNATURE) {
        fp.pos = JP2_SIGNATURE.len() as i128;
        let Jp2Header { size, mode, palette } = parse_jp2_header(&mut fp)?;
        if fp.read(12).ends_with(b"jp2c\xff\x4f\xff\x51") {
            parse_codestream(&mut fp)?;
            parse_comment(&mut fp)?;
        }
        (Codec::Jp2, size, Some(mode), palette)
    } else {
        return Err(malformed("not a JPEG 2000 file"));
    };
    let mode = mode.ok_or_else(|| malformed("unable to determine J2K image mode"))?;
    if width <= 0 || height <= 0 {
        return Err(malformed(format!("not identified by this driver (size {width}x{height})")));
    }
    Ok(Header { codec, width, height, mode, palette })
}

fn malformed(detail: impl ToString) -> Error {
    Error::malformed(FORMAT, detail)
}

/// A Python binary file over `bytes`: reads are short at the end, seeks may pass it.
struct File<'a> {
    bytes: &'a [u8],
    pos: i128,
}

impl<'a> File<'a> {
    /// `fp.read(n)`.
    fn read(&mut self, n: i128) -> &'a [u8] {
        let len = self.bytes.len() as i128;
        let start = self.pos.clamp(0, len);
        let end = self.pos.saturating_add(n.max(0)).clamp(start, len);
        self.pos = self.pos.max(end);
        self.bytes.get(start as usize..end as usize).unwrap_or(&[])
    }
}

/// `_binary.i16be` of a read: `struct.error` on fewer than 2 bytes.
fn i16be(data: &[u8]) -> Result<u16> {
    be16(data, 0).ok_or_else(|| malformed("unpack_from requires a buffer of at least 2 bytes"))
}

/// `_parse_codestream`: the SIZ segment after the SOC and SIZ markers.
fn parse_codestream(fp: &mut File) -> Result<((i64, i64), Option<Mode>)> {
    let hdr = fp.read(2);
    let lsiz = i16be(hdr)?;
    if lsiz < 38 {
        return Err(malformed("SIZ marker length must be at least 38"));
    }
    let mut siz = hdr.to_vec();
    siz.extend_from_slice(fp.read(i128::from(lsiz) - 2));
    let be32 = |at: usize| siz.get(at..at + 4).map(|b| i64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])));
    let short = || malformed("unpack_from requires a buffer of at least 38 bytes");
    let (xsiz, ysiz, xosiz, yosiz) = (
        be32(4).ok_or_else(short)?,
        be32(8).ok_or_else(short)?,
        be32(12).ok_or_else(short)?,
        be32(16).ok_or_else(short)?,
    );
    let csiz = be16(&siz, 36).ok_or_else(short)?;
    let mode = match csiz {
        1 => {
            let ssiz = *siz.get(38).ok_or_else(|| malformed("unpack_from requires a buffer of at least 39 bytes"))?;
            Some(if (ssiz & 0x7F) + 1 > 8 { Mode::I16 } else { Mode::L })
        }
        2 => Some(Mode::La),
        3 => Some(Mode::Rgb),
        4 => Some(Mode::Rgba),
        _ => return Err(malformed("unable to determine J2K image mode")),
    };
    Ok(((xsiz - xosiz, ysiz - yosiz), mode))
}

/// `_parse_comment`: marker segments up to the first tile or COM segment.
fn parse_comment(fp: &mut File) -> Result<()> {
    loop {
        let marker = fp.read(2);
        let Some(&typ) = marker.get(1) else {
            return if marker.is_empty() { Ok(()) } else { Err(malformed("index out of range")) };
        };
        if typ == 0x90 || typ == 0xD9 {
            return Ok(());
        }
        let length = i128::from(i16be(fp.read(2))?);
        if length < 2 {
            return Err(malformed("Marker length too small"));
        }
        if typ == 0x64 {
            fp.read(length - 2);
            return Ok(());
        }
        fp.pos += length - 2;
    }
}

/// Pillow's `BoxReader` over a file (`length` `None`) or over one box's contents.
struct BoxReader<'a, 'f> {
    fp: &'f mut File<'a>,
    length: Option<i128>,
    remaining_in_box: i128,
}

const LIMIT: i128 = 1 << 63;

impl<'a, 'f> BoxReader<'a, 'f> {
    fn can_read(&self, n: i128) -> bool {
        if self.length.is_some_and(|length| self.fp.pos + n > length) {
            return false;
        }
        self.remaining_in_box < 0 || n <= self.remaining_in_box
    }

    fn read_bytes(&mut self, n: i128) -> Result<&'a [u8]> {
        if !self.can_read(n) {
            return Err(malformed("Not enough data in header"));
        }
        if self.fp.pos + n >= LIMIT {
            return Err(malformed("Box length too large"));
        }
        let data = self.fp.read(n);
        if (data.len() as i128) < n {
            return Err(malformed(format!("Expected to read {n} bytes but only got {}.", data.len())));
        }
        if self.remaining_in_box > 0 {
            self.remaining_in_box -= n;
        }
        Ok(data)
    }

    /// `read_fields` of `n` unsigned big-endian fields of the given byte widths.
    fn read_fields<const N: usize>(&mut self, widths: [usize; N]) -> Result<[u64; N]> {
        let data = self.read_bytes(widths.iter().sum::<usize>() as i128)?;
        let mut at = 0;
        Ok(widths.map(|w| {
            let v = data[at..at + w].iter().fold(0u64, |v, &b| v << 8 | u64::from(b));
            at += w;
            v
        }))
    }

    /// `read_boxes`: the rest of the current box as a reader of its own.
    fn read_boxes(&mut self) -> Result<&'a [u8]> {
        self.read_bytes(self.remaining_in_box)
    }

    fn has_next_box(&self) -> bool {
        self.length.is_none_or(|length| self.fp.pos + self.remaining_in_box < length)
    }

    fn next_box_type(&mut self) -> Result<[u8; 4]> {
        if self.remaining_in_box > 0 {
            if self.fp.pos + self.remaining_in_box >= LIMIT {
                return Err(malformed("Box length too large"));
            }
            self.fp.pos += self.remaining_in_box;
        }
        self.remaining_in_box = -1;
        let [mut lbox, tbox] = self.read_fields([4, 4])?;
        let hlen = if lbox == 1 {
            [lbox] = self.read_fields([8])?;
            16
        } else {
            8
        };
        let lbox = i128::from(lbox);
        if lbox < hlen || !self.can_read(lbox - hlen) {
            return Err(malformed("Invalid header length"));
        }
        self.remaining_in_box = lbox - hlen;
        Ok((tbox as u32).to_be_bytes())
    }
}

/// What `_parse_jp2_header` gives the plugin (its mimetype and resolution aside).
struct Jp2Header {
    size: (i64, i64),
    mode: Mode,
    palette: Option<Palette>,
}

/// `_parse_jp2_header`: the `ihdr`, `colr`, `pclr` and `res ` boxes of the `jp2h` box. Leaves
/// `fp` after the `jp2h` box.
fn parse_jp2_header(fp: &mut File) -> Result<Jp2Header> {
    let contents = {
        let mut reader = BoxReader { fp: &mut *fp, length: None, remaining_in_box: -1 };
        loop {
            let tbox = reader.next_box_type()?;
            if &tbox == b"jp2h" {
                break reader.read_boxes()?;
            } else if &tbox == b"ftyp" {
                reader.read_fields([4])?;
            }
        }
    };
    let mut inner = File { bytes: contents, pos: 0 };
    let mut header = BoxReader { fp: &mut inner, length: Some(contents.len() as i128), remaining_in_box: -1 };
    let (mut size, mut mode, mut nc, mut colr, mut palette) = (None, None, None, None, None);
    while header.has_next_box() {
        let tbox = header.next_box_type()?;
        match &tbox {
            b"ihdr" => {
                let [height, width, n, bpc] = header.read_fields([4, 4, 2, 1])?;
                size = Some((width as i64, height as i64));
                nc = Some(n);
                mode = match n {
                    1 if bpc & 0x7F > 8 => Some(Mode::I16),
                    1 => Some(Mode::L),
                    2 => Some(Mode::La),
                    3 => Some(Mode::Rgb),
                    4 => Some(Mode::Rgba),
                    _ => mode,
                };
            }
            b"colr" => {
                let [meth, _, _, enumcs] = header.read_fields([1, 1, 1, 4])?;
                if meth == 1 {
                    match enumcs {
                        0 | 15 => colr = Some("1"),
                        12 => {
                            colr = Some("CMYK");
                            if nc == Some(4) {
                                mode = Some(Mode::Cmyk);
                            }
                        }
                        17 => colr = Some("L"),
                        _ => {}
                    }
                }
            }
            b"pclr" if matches!(mode, Some(Mode::L | Mode::La)) && !matches!(colr, Some("1" | "L")) => {
                let [ne, npc] = header.read_fields([2, 1])?;
                let (ne, npc) = (ne as u16 as usize, npc as u8 as usize);
                let depths = header.read_bytes(npc as i128)?;
                if depths.iter().all(|&d| d <= 8) {
                    let values = header.read_bytes((ne * npc) as i128)?;
                    let palette_mode = match (npc, colr) {
                        (4, Some("CMYK")) => PaletteMode::Cmyk,
                        (4, _) => PaletteMode::Rgba,
                        _ => PaletteMode::Rgb,
                    };
                    let entries = (0..ne).map(|i| &values[i * npc..(i + 1) * npc]);
                    palette = Some(Palette::from_entries(palette_mode, entries)?);
                    mode = if mode == Some(Mode::L) { Some(Mode::P) } else { Some(Mode::Pa) };
                }
            }
            b"res " => {
                let contents = header.read_boxes()?;
                let mut file = File { bytes: contents, pos: 0 };
                let mut res = BoxReader { fp: &mut file, length: Some(contents.len() as i128), remaining_in_box: -1 };
                while res.has_next_box() {
                    if &res.next_box_type()? == b"resc" {
                        res.read_fields([2, 2, 2, 2, 1, 1])?;
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    match (size, mode) {
        (Some(size), Some(mode)) => Ok(Jp2Header { size, mode, palette }),
        _ => Err(malformed("Malformed JP2 header")),
    }
}
