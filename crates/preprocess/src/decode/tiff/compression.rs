//! TIFF's lossless codecs, each decoding one strip or tile into exactly the bytes libtiff's
//! `TIFFReadEncodedStrip`/`TIFFReadTile` returns, never more than the segment's size (so a
//! decompression bomb stops at the expected length), and the predictors that follow them.

use super::ifd::ByteOrder;
use crate::{Error, Result};
use std::io::Read;

const FORMAT: &str = "TIFF";

/// The compressions decoded here (the TIFF `Compression` tag's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// 1: the stored bytes are the samples.
    None,
    /// 2: CCITT modified Huffman run lengths (T.4's one-dimensional codes, byte-aligned rows).
    CcittRle,
    /// 3: CCITT Group 3 (T.4).
    Group3,
    /// 4: CCITT Group 4 (T.6).
    Group4,
    /// 5: LZW, MSB first, with TIFF's early code-size switch.
    Lzw,
    /// 6: old-style JPEG (one JPEG interchange stream, JPEGInterchangeFormat).
    OldJpeg,
    /// 7: JPEG ("new-style", with JPEGTables).
    Jpeg,
    /// 8 and 32946: zlib.
    Deflate,
    /// 32773: PackBits.
    PackBits,
    /// 34925: LZMA (an `.xz` stream, as libtiff's `LZMADecode` reads it).
    Lzma,
    /// 50000: Zstandard (libtiff's `ZSTDDecode`).
    Zstd,
}

impl Codec {
    /// The codec of a `Compression` value; `Unsupported` naming it otherwise.
    pub fn from_tag(value: u64) -> Result<Codec> {
        Ok(match value {
            1 => Codec::None,
            2 => Codec::CcittRle,
            3 => Codec::Group3,
            4 => Codec::Group4,
            5 => Codec::Lzw,
            6 => Codec::OldJpeg,
            7 => Codec::Jpeg,
            8 | 32946 => Codec::Deflate,
            32773 => Codec::PackBits,
            34925 => Codec::Lzma,
            50000 => Codec::Zstd,
            50001 => return Err(Error::unsupported(FORMAT, "WebP compression (50001)")),
            other => return Err(Error::unsupported(FORMAT, format!("compression {other}"))),
        })
    }
}

pub(super) fn short(what: &str, got: usize, want: usize) -> Error {
    Error::Truncated { format: FORMAT, detail: format!("{what} data decodes to {got} of {want} bytes") }
}

/// LZW: exactly `out.len()` bytes, else an error. `old_style` (decided by the image's first
/// segment, as libtiff decides it) takes libtiff's `LZWDecodeCompat` ([`super::lzw_compat`]);
/// otherwise new-style codes (`LZWDecode`), where a segment marked old-style is refused.
pub fn lzw(data: &[u8], out: &mut [u8], old_style: bool) -> Result<()> {
    if old_style {
        return super::lzw_compat::decode(data, out);
    }
    if super::lzw_compat::is_old_style(data) {
        return Err(Error::unsupported(FORMAT, "an old-style (LSB-first) LZW segment in a new-style LZW image"));
    }
    let mut decoder = weezl::decode::Decoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8);
    let (mut read, mut written) = (0usize, 0usize);
    while written < out.len() {
        let (Some(input), Some(output)) = (data.get(read..), out.get_mut(written..)) else { break };
        let result = decoder.decode_bytes(input, output);
        read += result.consumed_in;
        written += result.consumed_out;
        match result.status {
            Ok(weezl::LzwStatus::Ok) => {}
            Ok(weezl::LzwStatus::Done | weezl::LzwStatus::NoProgress) => break,
            Err(e) if written < out.len() => return Err(Error::malformed(FORMAT, format!("LZW: {e}"))),
            Err(_) => break,
        }
    }
    if written < out.len() {
        return Err(short("LZW", written, out.len()));
    }
    Ok(())
}

/// zlib (libtiff's `ZIPDecode`): exactly `out.len()` bytes, else an error.
pub fn deflate(data: &[u8], out: &mut [u8]) -> Result<()> {
    let mut decoder = flate2::read::ZlibDecoder::new(data);
    let mut written = 0;
    while written < out.len() {
        let Some(rest) = out.get_mut(written..) else { break };
        match decoder.read(rest) {
            Ok(0) => break,
            Ok(n) => written += n,
            Err(e) => return Err(Error::malformed(FORMAT, format!("Deflate: {e}"))),
        }
    }
    if written < out.len() {
        return Err(short("Deflate", written, out.len()));
    }
    Ok(())
}

/// Zstandard as libtiff's `ZSTDDecode` reads a segment, through the same libzstd (1.5.7):
/// `ZSTD_decompressStream` until the frame ends, the data is used up or `out` is full; exactly
/// `out.len()` bytes, else an error. libzstd's own bound on a frame's window (128 MiB) bounds
/// its memory; the output never exceeds the segment.
pub fn zstd(data: &[u8], out: &mut [u8]) -> Result<()> {
    let want = out.len();
    let zstd_error = |code: usize| Error::malformed(FORMAT, format!("Zstandard: {}", zstd_safe::get_error_name(code)));
    let mut context = zstd_safe::DCtx::create();
    context.init().map_err(zstd_error)?;
    let mut input = zstd_safe::InBuffer::around(data);
    let mut output = zstd_safe::OutBuffer::around(out);
    loop {
        let hint = context.decompress_stream(&mut output, &mut input).map_err(zstd_error)?;
        if hint == 0 || input.pos() >= data.len() || output.pos() >= want {
            break;
        }
    }
    if output.pos() < want {
        return Err(short("Zstandard", output.pos(), want));
    }
    Ok(())
}

/// PackBits (libtiff's `PackBitsDecode`): exactly `out.len()` bytes, else an error.
pub fn packbits(data: &[u8], out: &mut [u8]) -> Result<()> {
    let (mut i, mut o) = (0usize, 0usize);
    while o < out.len() {
        let Some(&n) = data.get(i) else { break };
        i += 1;
        let n = n as i8;
        if n >= 0 {
            let len = (n as usize + 1).min(out.len() - o);
            let Some(src) = data.get(i..i + len) else { break };
            out[o..o + len].copy_from_slice(src);
            i += n as usize + 1;
            o += len;
        } else if n != -128 {
            let Some(&b) = data.get(i) else { break };
            i += 1;
            let len = (1 - n as isize) as usize;
            let len = len.min(out.len() - o);
            out[o..o + len].fill(b);
            o += len;
        }
    }
    if o < out.len() {
        return Err(short("PackBits", o, out.len()));
    }
    Ok(())
}

/// Reverses the bits of every byte (`FillOrder` 2: libtiff's `TIFFReverseBits` before decoding).
pub fn reverse_bits(data: &mut [u8]) {
    for b in data {
        *b = b.reverse_bits();
    }
}

/// Undoes libtiff's horizontal predictor (2) on one segment of `rows` rows of `row_bytes`
/// bytes: per row, each sample adds the same sample of the previous pixel (`stride` samples
/// back), with wrapping arithmetic in the sample's width and the file's byte order.
pub fn undo_horizontal(data: &mut [u8], row_bytes: usize, stride: usize, bits: u8, order: ByteOrder) -> Result<()> {
    if row_bytes == 0 {
        return Ok(());
    }
    for row in data.chunks_mut(row_bytes) {
        match bits {
            8 => {
                for i in stride..row.len() {
                    row[i] = row[i].wrapping_add(row[i - stride]);
                }
            }
            16 => {
                let n = row.len() / 2;
                for i in stride..n {
                    let prev = order.u16([row[2 * (i - stride)], row[2 * (i - stride) + 1]]);
                    let cur = order.u16([row[2 * i], row[2 * i + 1]]);
                    let v = cur.wrapping_add(prev);
                    let b = if order == ByteOrder::Little { v.to_le_bytes() } else { v.to_be_bytes() };
                    row[2 * i..2 * i + 2].copy_from_slice(&b);
                }
            }
            32 => {
                let n = row.len() / 4;
                for i in stride..n {
                    let p = 4 * (i - stride);
                    let c = 4 * i;
                    let prev = order.u32([row[p], row[p + 1], row[p + 2], row[p + 3]]);
                    let cur = order.u32([row[c], row[c + 1], row[c + 2], row[c + 3]]);
                    let v = cur.wrapping_add(prev);
                    let b = if order == ByteOrder::Little { v.to_le_bytes() } else { v.to_be_bytes() };
                    row[c..c + 4].copy_from_slice(&b);
                }
            }
            other => return Err(Error::unsupported(FORMAT, format!("horizontal predictor on {other}-bit samples"))),
        }
    }
    Ok(())
}

/// Undoes libtiff's floating-point predictor (3) on one segment: per row, bytes are
/// accumulated `stride` apart, then regrouped from byte planes (most significant first) into
/// samples, written back in the file's byte order.
pub fn undo_floating_point(data: &mut [u8], row_bytes: usize, stride: usize, bits: u8, order: ByteOrder) -> Result<()> {
    let bps = usize::from(bits / 8);
    if !matches!(bits, 16 | 32 | 64) || row_bytes == 0 {
        return Err(Error::unsupported(FORMAT, format!("floating-point predictor on {bits}-bit samples")));
    }
    let mut tmp = vec![0u8; row_bytes];
    for row in data.chunks_mut(row_bytes) {
        for i in stride..row.len() {
            row[i] = row[i].wrapping_add(row[i - stride]);
        }
        let wc = row.len() / bps;
        let tmp = &mut tmp[..row.len()];
        tmp.copy_from_slice(row);
        for i in 0..wc {
            for byte in 0..bps {
                let src = tmp[byte * wc + i];
                let at = if order == ByteOrder::Big { byte } else { bps - 1 - byte };
                row[i * bps + at] = src;
            }
        }
    }
    Ok(())
}
