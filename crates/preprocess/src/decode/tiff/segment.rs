//! One strip or tile decoded as libtiff decodes it for Pillow (`TIFFReadEncodedStrip` /
//! `TIFFReadTile`: the codec, then the predictor), or read as Pillow's raw decoder reads
//! uncompressed data; chroma-subsampled YCbCr decoded as its RGBA interface reads it and
//! expanded to one triplet per pixel ([`super::subsampling`]).

use super::compression::{self, Codec};
use super::{FORMAT, Layout, Segments, ccitt, jpeg, lzma, lzw_compat, malformed, truncated};
use crate::{Error, Limits, Result};

/// The CCITT codec's state for the whole image (libtiff's, and Pillow's strip buffer, both kept
/// from one segment to the next); `None` for the other codecs.
pub(super) fn fax_state(layout: &Layout, segs: &Segments, width: usize) -> Result<Option<ccitt::Fax>> {
    let scheme = match layout.codec {
        Codec::CcittRle => ccitt::Scheme::ModifiedHuffman,
        Codec::Group3 if layout.group3_2d => ccitt::Scheme::Group3TwoD,
        Codec::Group3 => ccitt::Scheme::Group3,
        Codec::Group4 => ccitt::Scheme::Group4,
        _ => return Ok(None),
    };
    if layout.bits != 1 || layout.samples != 1 {
        return Err(Error::unsupported(FORMAT, "CCITT compression of more than 1 bit per pixel"));
    }
    ccitt::Fax::new(scheme, segs.seg_w, segs.seg_h, width).map(Some)
}

/// What a segment's codec needs besides its bytes: JPEGTables, the CCITT state, whether the
/// image's LZW is old-style (decided by the first segment decoded), the row stride of
/// uncompressed data, the limits.
pub(super) struct SegmentCodec<'a, 'f> {
    pub tables: Option<&'a [u8]>,
    pub fax: Option<&'f mut ccitt::Fax>,
    pub lzw_old_style: &'f mut Option<bool>,
    /// Uncompressed data: the bytes from one row's start to the next in the file.
    pub raw_stride: usize,
    pub limits: &'a Limits,
}

/// Decodes segment `i` (at `offset`) into `out` (`rows` rows of `row_bytes`).
#[allow(clippy::too_many_arguments, reason = "the segment's place, geometry and codec inputs")]
pub(super) fn decode(
    bytes: &[u8],
    offset: u64,
    i: usize,
    segs: &Segments,
    layout: &Layout,
    codec: SegmentCodec<'_, '_>,
    rows: usize,
    row_bytes: usize,
    out: &mut [u8],
) -> Result<()> {
    let start = usize::try_from(offset).map_err(|_| truncated("segment offset past the end"))?;
    if layout.codec == Codec::None {
        // Pillow's raw decoder: the rows it needs from the offset, `raw_stride` apart, whatever
        // StripByteCounts says.
        let stride = codec.raw_stride;
        for (r, row) in out.chunks_mut(row_bytes.max(1)).enumerate() {
            let src = r
                .checked_mul(stride)
                .and_then(|at| start.checked_add(at))
                .and_then(|from| Some(from..from.checked_add(row.len())?))
                .and_then(|range| bytes.get(range))
                .ok_or_else(|| truncated(format!("segment {i} past the end of the file")))?;
            row.copy_from_slice(src);
        }
        if layout.reverse_bits {
            compression::reverse_bits(out);
        }
        return Ok(());
    }
    let count = segs
        .counts
        .as_ref()
        .and_then(|c| c.get(i).copied())
        .ok_or_else(|| malformed(format!("no byte count for segment {i}")))?;
    let data = usize::try_from(count)
        .ok()
        .and_then(|n| start.checked_add(n))
        .and_then(|end| bytes.get(start..end))
        .ok_or_else(|| truncated(format!("segment {i} past the end of the file")))?;
    let mut owned;
    let data = if layout.reverse_bits {
        owned = data.to_vec();
        compression::reverse_bits(&mut owned);
        &owned[..]
    } else {
        data
    };
    let Some(sub) = layout.subsampling else {
        run_codec(data, segs, layout, codec, rows, out)?;
        return undo_predictor(layout, out, row_bytes);
    };
    // libtiff's RGBA interface: a zeroed buffer of the segment's packed size, the bytes it asks
    // for decoded into it (a strip's may be fewer), the predictor over rows of its scanline.
    let too_large = || malformed("YCbCr segment size overflows");
    let packed_len = sub.packed_len(segs.seg_w, rows).ok_or_else(too_large)?;
    let read = if segs.tiled { packed_len } else { sub.strip_read_len(segs.seg_w, rows).ok_or_else(too_large)? };
    let mut packed = vec![0u8; packed_len];
    let decoded = &mut packed[..read];
    run_codec(data, segs, layout, codec, rows, decoded)?;
    // libtiff's predictor rows: a tile's are `TIFFTileRowSize` (3 samples a pixel, subsampling
    // ignored), a strip's `TIFFScanlineSize`. Data not of whole rows, or rows not of whole
    // pixels (`horAcc8`), fail before any row is undone; `TIFFReadRGBA*` ignores the failure,
    // so the segment stays as its codec left it.
    let predictor_row = if segs.tiled {
        segs.seg_w.checked_mul(layout.samples).ok_or_else(too_large)?
    } else {
        sub.scanline(segs.seg_w).ok_or_else(too_large)?
    };
    let whole_rows =
        predictor_row != 0 && read.is_multiple_of(predictor_row) && predictor_row.is_multiple_of(layout.samples);
    if layout.predictor != 2 || whole_rows {
        undo_predictor(layout, decoded, predictor_row)?;
    }
    sub.expand(&packed, segs.seg_w, rows, out);
    Ok(())
}

/// The segment's codec: exactly `out.len()` bytes of `data` decoded, else an error.
fn run_codec(
    data: &[u8],
    segs: &Segments,
    layout: &Layout,
    codec: SegmentCodec<'_, '_>,
    rows: usize,
    out: &mut [u8],
) -> Result<()> {
    let SegmentCodec { tables, fax, lzw_old_style, limits, .. } = codec;
    match layout.codec {
        Codec::None => {}
        Codec::Lzw => {
            let old_style = *lzw_old_style.get_or_insert_with(|| lzw_compat::is_old_style(data));
            compression::lzw(data, out, old_style)?;
        }
        Codec::Deflate => compression::deflate(data, out)?,
        Codec::PackBits => compression::packbits(data, out)?,
        Codec::Group3 | Codec::Group4 | Codec::CcittRle => {
            let fax = fax.ok_or_else(|| malformed("CCITT segment without the codec's state"))?;
            fax.decode(data, rows, out)?;
        }
        Codec::OldJpeg => return Err(malformed("old-style JPEG is read whole, not by segment")),
        Codec::Lzma => lzma::decode(data, out)?,
        Codec::Zstd => compression::zstd(data, out)?,
        Codec::Jpeg => {
            if layout.bits != 8 || layout.planar {
                return Err(Error::unsupported(FORMAT, "JPEG compression of planar or non-8-bit samples"));
            }
            jpeg::decode_segment(tables, data, layout.photometric, layout.samples, segs.seg_w, rows, out, limits)?;
        }
    }
    Ok(())
}

/// libtiff's predictor over the decoded rows of `row_bytes` bytes.
fn undo_predictor(layout: &Layout, out: &mut [u8], row_bytes: usize) -> Result<()> {
    let stride = if layout.planar { 1 } else { layout.samples };
    match layout.predictor {
        1 => Ok(()),
        2 => compression::undo_horizontal(out, row_bytes, stride, layout.bits, layout.order),
        3 => compression::undo_floating_point(out, row_bytes, stride, layout.bits, layout.order),
        other => Err(Error::unsupported(FORMAT, format!("predictor {other}"))),
    }
}
