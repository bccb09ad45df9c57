//! TIFF as Pillow 13 reads frame 0 (`TiffImagePlugin`): the first IFD, Pillow's `OPEN_INFO`
//! mode for its tags, the strips or tiles decoded as libtiff decodes them for Pillow's
//! "libtiff" decoder (`TiffDecode.c`, any compression) or as Pillow's raw unpackers read
//! uncompressed data, then `convert("RGB")`. The orientation is the IFD's own tag 274, else
//! the `tiff:Orientation` of its XMP packet (tag 700), as `getexif()` reads them.
//!
//! Decoded: strips and tiles, contiguous and planar samples; 1/2/4/8/12/16/32-bit and float
//! samples as Pillow's table lists them; bilevel, gray, RGB, RGBA, premultiplied RGBa, CMYK,
//! palette, CIELab (Pillow's `LAB` through Little CMS, [`lab`]); none, LZW, Deflate, PackBits,
//! LZMA, Zstandard, CCITT modified Huffman (RLE), Group 3 (1-D) and Group 4 (damaged data as
//! libtiff recovers it, [`ccitt`]), JPEG (YCbCr, RGB, gray, CMYK, CIELab) and old-style JPEG
//! (one interchange stream) compression; horizontal and floating-point predictors; old-style
//! LZW ([`lzw_compat`]). Compressed YCbCr outside JPEG goes through libtiff's RGBA interface's
//! conversion ([`ycbcr`]): contiguous samples of every subsampling it converts (expanded by
//! [`subsampling`]), planar ones without subsampling; uncompressed contiguous YCbCr through
//! Pillow's own. Refused with [`Error::Unsupported`] naming them, as Pillow refuses them: modes
//! its table lacks with the file's FillOrder, uncompressed planar YCbCr, subsamplings libtiff
//! has no routine for. Refused although Pillow reads them: WebP.

mod ccitt;
mod compression;
mod convert;
mod ifd;
mod jpeg;
mod lab;
mod lzma;
mod lzw_compat;
mod mode;
mod old_jpeg;
mod palette;
mod raster;
mod segment;
mod subsampling;
mod tags;
pub(super) mod ycbcr;

use super::Decoded;
use crate::{Error, Limits, Orientation, Result, RgbImage};
use compression::Codec;
use ifd::Ifd;
use mode::{Key, Pixel};
use raster::Raster;
use segment::SegmentCodec;
use subsampling::Subsampling;
use tags::*;

const FORMAT: &str = "TIFF";

/// Pillow's `MAX_SAMPLESPERPIXEL`.
const MAX_SAMPLES_PER_PIXEL: u64 = 6;

fn malformed(detail: impl ToString) -> Error {
    Error::malformed(FORMAT, detail)
}

fn truncated(detail: impl ToString) -> Error {
    Error::Truncated { format: FORMAT, detail: detail.to_string() }
}

/// Decodes the first image of a TIFF file; its size is checked against `limits` before any
/// pixel buffer exists.
pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Decoded> {
    let ifd = Ifd::first(bytes)?;
    if ifd.has(0xBC01) {
        return Err(Error::unsupported(FORMAT, "Windows Media Photo data"));
    }
    let (Some(width), Some(height)) = (ifd.int(IMAGE_WIDTH), ifd.int(IMAGE_LENGTH)) else {
        return Err(malformed("missing dimensions"));
    };
    limits.check(width, height)?;
    let (Ok(w32), Ok(h32)) = (u32::try_from(width), u32::try_from(height)) else {
        return Err(malformed(format!("dimensions {width}x{height}")));
    };
    let layout = Layout::from_ifd(&ifd)?;
    let raster = if layout.codec == Codec::OldJpeg {
        old_jpeg_raster(bytes, &ifd, w32 as usize, h32 as usize, limits)?
    } else {
        read_raster(bytes, &ifd, &layout, w32 as usize, h32 as usize, limits)?
    };
    let palette = palette::of(&ifd, layout.pixel)?;
    let tables = (layout.pixel == Pixel::YCbCr).then(|| ycbcr::YCbCrToRgb::of(&ifd)).transpose()?;
    let rgb = match layout.pixel {
        Pixel::Lab => lab::to_rgb(&raster),
        pixel => Ok(convert::to_rgb(&raster, pixel, &palette, tables.as_ref())),
    };
    for plane in raster.planes {
        crate::buffer_pool::give(plane);
    }
    let rgb = rgb?;
    // Pillow's getexif: tag 274 when present, else the XMP packet's (tag 700) tiff:Orientation.
    let orientation = match ifd.int(ORIENTATION) {
        Some(value) => u32::try_from(value).map_or(Orientation::Normal, Orientation::from_exif_value),
        None => ifd.bytes(XMP).map_or(Orientation::Normal, Orientation::from_xmp),
    };
    Ok(Decoded { image: RgbImage::from_parts(w32, h32, rgb), orientation })
}

/// Old-style JPEG as RGB samples: the interchange stream (tag 513, else the first strip)
/// through [`old_jpeg::decode`] with libtiff's YCbCr tables for the IFD's YCbCrCoefficients and
/// ReferenceBlackWhite (libtiff's defaults where absent).
fn old_jpeg_raster(bytes: &[u8], ifd: &Ifd<'_>, width: usize, height: usize, limits: &Limits) -> Result<Raster> {
    let offset = ifd
        .int(JPEG_INTERCHANGE_FORMAT)
        .or_else(|| ifd.int(STRIP_OFFSETS))
        .ok_or_else(|| malformed("old-style JPEG without JPEGInterchangeFormat"))?;
    let rgb = old_jpeg::decode(bytes, offset, width, height, &ycbcr::YCbCrToRgb::of(ifd)?, limits)?;
    Ok(Raster { width, height, planes: vec![rgb], row_bytes: width * 3, samples: 3, bits: 8, order: ifd.order })
}

/// What `_setup` decides from the tags: the codec, the pixel semantics and the sample layout.
#[derive(Debug)]
struct Layout {
    codec: Codec,
    pixel: Pixel,
    photometric: u64,
    /// Samples per pixel after Pillow's adjustments (planar unspecified extras dropped).
    samples: usize,
    bits: u8,
    planar: bool,
    /// FillOrder 2: bits reversed in every byte (libtiff before decoding; Pillow's `;R` raw
    /// unpackers).
    reverse_bits: bool,
    order: ifd::ByteOrder,
    predictor: u64,
    /// Chroma subsampling of compressed contiguous YCbCr read through libtiff's RGBA interface.
    subsampling: Option<Subsampling>,
    /// Pillow's row stride of an uncompressed tile past the image's right edge, per pixel of
    /// the tile's width: the sum of the bits per sample over this divisor (8, times the bands
    /// of Pillow's `bps_count` for planar data), rounded down.
    edge_row: (u64, u64),
    /// Group 3 with two-dimensional coding (T4Options bit 0).
    group3_2d: bool,
}

impl Layout {
    fn from_ifd(ifd: &Ifd<'_>) -> Result<Layout> {
        let codec = Codec::from_tag(ifd.int(COMPRESSION).unwrap_or(1))?;
        let old_jpeg = codec == Codec::OldJpeg;
        let group3_2d = codec == Codec::Group3 && ifd.int(T4_OPTIONS).unwrap_or(0) & 1 != 0;
        // Pillow takes old-style JPEG as YCbCr whatever the tag says.
        let photometric = if old_jpeg { 6 } else { ifd.int(PHOTOMETRIC).unwrap_or(0) };
        let planar = ifd.int(PLANAR_CONFIGURATION).unwrap_or(1) == 2;
        let fill_order = ifd.int(FILL_ORDER).unwrap_or(1);
        let mut sample_format = ifd.ints(SAMPLE_FORMAT).unwrap_or_else(|| vec![1]);
        if sample_format.len() > 1 && sample_format.iter().all(|&v| v == sample_format[0]) {
            sample_format.truncate(1);
        }
        let mut bits = ifd.ints(BITS_PER_SAMPLE).unwrap_or_else(|| vec![1]);
        let mut extra = ifd.ints(EXTRA_SAMPLES).unwrap_or_default();
        let mut samples = ifd.int(SAMPLES_PER_PIXEL).unwrap_or(if old_jpeg { 3 } else { 1 });
        if planar && !extra.is_empty() && extra.iter().all(|&e| e == 0) {
            bits.truncate(bits.len().saturating_sub(extra.len()));
            samples = samples.saturating_sub(extra.len() as u64);
            extra.clear();
        }
        if samples > MAX_SAMPLES_PER_PIXEL {
            return Err(malformed(format!("{samples} samples per pixel")));
        }
        if (samples as usize) < bits.len() {
            bits.truncate(samples as usize);
        } else if samples as usize > bits.len() && bits.len() == 1 {
            bits = vec![bits[0]; samples as usize];
        }
        if bits.len() != samples as usize || samples == 0 {
            return Err(malformed("unknown data organization"));
        }
        // Pillow looks its key up with the file's FillOrder (its table lacks most modes with
        // FillOrder 2: "unknown pixel mode"); for libtiff, which undoes FillOrder 2 itself, it
        // then takes the mode of the same key with FillOrder 1.
        let libtiff = codec != Codec::None;
        let mut key = Key {
            order: ifd.order,
            photometric,
            sample_format: &sample_format,
            fill_order,
            bits: &bits,
            extra: &extra,
        };
        let mut found = mode::lookup(&key);
        if libtiff && fill_order == 2 && found.is_some() {
            key.fill_order = 1;
            found = mode::lookup(&key);
        }
        let Some(mut pixel) = found else {
            return Err(Error::unsupported(
                FORMAT,
                format!(
                    "photometric {photometric}, sample format {sample_format:?}, bits {bits:?}, extra samples {extra:?}, fill order {fill_order}"
                ),
            ));
        };
        let mut subsampling = None;
        if photometric == 6 && pixel == Pixel::YCbCr {
            if old_jpeg && !planar {
                pixel = Pixel::Rgb { bits: 8 };
            } else if codec == Codec::Jpeg && !planar {
                // Pillow picks rawmode RGB only when its own PlanarConfiguration compares equal
                // to 1; otherwise RGBX, whose rows are wider than libtiff's, and
                // `TiffDecode.c` refuses the segment size.
                if ifd.is_bytes(PLANAR_CONFIGURATION) {
                    return Err(malformed("YCbCr JPEG tiles wider than libtiff's rows (rawmode RGBX)"));
                }
                pixel = Pixel::Rgb { bits: 8 };
            } else if codec == Codec::None && !planar {
                // Pillow's raw path: its `YCbCr` unpacker, three bytes a pixel whatever the
                // subsampling tag says, then its own YCbCr to RGB conversion.
                pixel = Pixel::YCbCrPillow;
            } else if codec == Codec::None {
                // Pillow's raw planar path takes the rawmode "YCbCr" a letter per plane, and
                // "C" names no unpacker ("unknown raw mode").
                return Err(Error::unsupported(FORMAT, "uncompressed planar YCbCr"));
            } else {
                // libtiff's RGBA interface (`TIFFRGBAImage`) converts it: contiguous samples
                // of every subsampling it has a routine for, planar ones without subsampling.
                subsampling = Subsampling::of(ifd)?;
                if planar && subsampling.is_some() {
                    return Err(Error::unsupported(FORMAT, "planar chroma-subsampled YCbCr"));
                }
            }
        }
        let bit_depth = bits[0];
        let Ok(mut bit_depth) = u8::try_from(bit_depth) else {
            return Err(malformed(format!("{bit_depth} bits per sample")));
        };
        if !matches!(bit_depth, 1 | 2 | 4 | 8 | 12 | 16 | 32) || bits.iter().any(|&b| b != u64::from(bit_depth)) {
            return Err(Error::unsupported(FORMAT, format!("bits per sample {bits:?}")));
        }
        // Pillow's raw planar strips and tiles take one letter of the rawmode per plane (the
        // "R" of "RGB;16L"): an 8-bit band unpacker, so each plane's rows are a segment's width
        // in bytes, the 16-bit samples' bytes read as 8-bit samples.
        if codec == Codec::None && planar && samples > 1 && bit_depth == 16 {
            match pixel {
                Pixel::Rgb { bits: 16 } => (pixel, bit_depth) = (Pixel::Rgb { bits: 8 }, 8),
                Pixel::Cmyk { bits: 16 } => (pixel, bit_depth) = (Pixel::Cmyk { bits: 8 }, 8),
                _ => {}
            }
        }
        if planar && samples > 1 {
            if !matches!(bit_depth, 8 | 16) {
                return Err(malformed(format!("planar {bit_depth}-bit samples")));
            }
            if codec == Codec::None && (bit_depth != 8 || matches!(pixel, Pixel::RgbPremultiplied { .. })) {
                return Err(Error::unsupported(
                    FORMAT,
                    format!("uncompressed planar {pixel:?} of {bit_depth}-bit samples"),
                ));
            }
        }
        // Pillow's `bps_count`: the colour bands of the photometric, then the extra samples.
        let color_bands = match photometric {
            2 | 6 | 8 => 3,
            5 => 4,
            _ => 1,
        };
        Ok(Layout {
            codec,
            pixel,
            photometric,
            samples: samples as usize,
            bits: bit_depth,
            planar: planar && samples > 1,
            reverse_bits: fill_order == 2,
            order: ifd.order,
            predictor: if libtiff { ifd.int(PREDICTOR).unwrap_or(1) } else { 1 },
            subsampling,
            edge_row: (bits.iter().sum(), if planar { 8 * (color_bands + extra.len() as u64) } else { 8 }),
            group3_2d,
        })
    }

    /// Planes read from planar data: the bands of Pillow's mode that `convert("RGB")` uses.
    fn planes(&self) -> usize {
        if !self.planar {
            return 1;
        }
        let needed = match self.pixel {
            Pixel::Rgb { .. } => 3,
            Pixel::Lab | Pixel::YCbCr => 3,
            Pixel::RgbPremultiplied { .. } | Pixel::Cmyk { .. } => 4,
            _ => 1,
        };
        needed.min(self.samples)
    }
}

/// Strip or tile geometry: segment size, count per plane and where each lies.
struct Segments {
    seg_w: usize,
    seg_h: usize,
    across: usize,
    per_plane: usize,
    offsets: Vec<u64>,
    counts: Option<Vec<u64>>,
    tiled: bool,
}

fn segments(ifd: &Ifd<'_>, layout: &Layout, width: usize, height: usize) -> Result<Segments> {
    let libtiff = layout.codec != Codec::None;
    let tiled = if libtiff { ifd.has(TILE_WIDTH) } else { !ifd.has(STRIP_OFFSETS) && ifd.has(TILE_OFFSETS) };
    let (seg_w, seg_h, offsets, counts) = if tiled {
        let (Some(tw), Some(th)) = (ifd.int(TILE_WIDTH), ifd.int(TILE_LENGTH)) else {
            return Err(malformed("tiles without TileWidth/TileLength"));
        };
        // A tile never needs to be larger than the image rounded up to 16 (libtiff's tile
        // multiple), or 1024: past that it is hostile, refused before allocating it.
        let fits = |t: u64, dim: usize| t > 0 && (t <= (dim as u64).next_multiple_of(16) || t <= 1024);
        if !fits(tw, width) || !fits(th, height) {
            return Err(malformed(format!("tile of {tw}x{th} for a {width}x{height} image")));
        }
        let offsets = ifd.ints(TILE_OFFSETS).ok_or_else(|| malformed("no TileOffsets"))?;
        (tw as usize, th as usize, offsets, ifd.ints(TILE_BYTE_COUNTS))
    } else {
        let rows = ifd.int(ROWS_PER_STRIP).unwrap_or(height as u64);
        if rows == 0 {
            return Err(malformed("RowsPerStrip 0"));
        }
        // `TiffDecode.c` refuses a RowsPerStrip past INT_MAX (0xFFFFFFFF means "one strip").
        if libtiff && rows > i32::MAX as u64 && rows != u64::from(u32::MAX) {
            return Err(malformed(format!("RowsPerStrip {rows}")));
        }
        let offsets = ifd.ints(STRIP_OFFSETS).ok_or_else(|| malformed("no StripOffsets"))?;
        (width, rows.min(height as u64) as usize, offsets, ifd.ints(STRIP_BYTE_COUNTS))
    };
    let across = width.div_ceil(seg_w);
    let per_plane = across * height.div_ceil(seg_h);
    // Pillow's raw planar tiles take rawmode[layer] for every offset: more offsets than the
    // rawmode has letters fail `_setup` (IndexError, so the file is not identified).
    if !libtiff && layout.planar && offsets.len() > per_plane * layout.samples {
        return Err(malformed(format!(
            "{} offsets for {} planes of {per_plane} segments",
            offsets.len(),
            layout.samples
        )));
    }
    Ok(Segments { seg_w, seg_h, across, per_plane, offsets, counts, tiled })
}

/// Decodes every strip or tile into a [`Raster`].
fn read_raster(
    bytes: &[u8],
    ifd: &Ifd<'_>,
    layout: &Layout,
    width: usize,
    height: usize,
    limits: &Limits,
) -> Result<Raster> {
    let segs = segments(ifd, layout, width, height)?;
    if let Some(sub) = layout.subsampling
        && segs.tiled
        && !sub.fits_tile(segs.seg_w)
    {
        return Err(Error::unsupported(FORMAT, format!("{sub:?} YCbCr in tiles {} pixels wide", segs.seg_w)));
    }
    let plane_samples = if layout.planar { 1 } else { layout.samples };
    let row_bytes =
        Raster::row_bytes(width, plane_samples, layout.bits).ok_or_else(|| malformed("row size overflows"))?;
    let seg_row_bytes =
        Raster::row_bytes(segs.seg_w, plane_samples, layout.bits).ok_or_else(|| malformed("row size overflows"))?;
    let planes = layout.planes();
    let plane_len = row_bytes.checked_mul(height).ok_or_else(|| malformed("image size overflows"))?;
    // Uncompressed samples are at least the raster's size: a file shorter than that is
    // truncated, refused before the raster is allocated.
    if layout.codec == Codec::None && plane_len.saturating_mul(planes) > bytes.len() {
        return Err(truncated(format!("{} bytes cannot hold {planes} planes of {plane_len} bytes", bytes.len())));
    }
    let mut raster_planes = Vec::with_capacity(planes);
    for _ in 0..planes {
        let mut p = crate::buffer_pool::take(plane_len);
        p.fill(0);
        raster_planes.push(p);
    }
    let tables = ifd.bytes(JPEG_TABLES);
    let mut fax = segment::fax_state(layout, &segs, width)?;
    let mut lzw_old_style = None;
    let mut seg = Vec::new();
    // Pillow's raw decoder reads a single image-sized strip from the last offset.
    let single_raw = layout.codec == Codec::None && !layout.planar && segs.per_plane == 1;
    for (plane, raster_plane) in raster_planes.iter_mut().enumerate() {
        for index in 0..segs.per_plane {
            let i = plane * segs.per_plane + index;
            let offset = if single_raw { segs.offsets.last().copied() } else { segs.offsets.get(i).copied() };
            let offset = offset.ok_or_else(|| malformed(format!("no offset for segment {i}")))?;
            let (x0, y0) = ((index % segs.across) * segs.seg_w, (index / segs.across) * segs.seg_h);
            let rows_left = height - y0;
            // libtiff decodes a tile whole and a strip down to the image's last row.
            let seg_rows = if segs.tiled { segs.seg_h } else { segs.seg_h.min(rows_left) };
            let seg_len = seg_rows.checked_mul(seg_row_bytes).ok_or_else(|| malformed("segment size overflows"))?;
            seg.clear();
            seg.resize(seg_len, 0);
            // Pillow's raw decoder reads a tile past the right edge at its own stride.
            let raw_stride = if segs.tiled && x0 + segs.seg_w > width {
                let (bits, per) = layout.edge_row;
                usize::try_from((segs.seg_w as u64).saturating_mul(bits) / per.max(1)).unwrap_or(usize::MAX)
            } else {
                seg_row_bytes
            };
            let fax = fax.as_mut();
            let codec = SegmentCodec { tables, fax, lzw_old_style: &mut lzw_old_style, raw_stride, limits };
            segment::decode(bytes, offset, i, &segs, layout, codec, seg_rows, seg_row_bytes, &mut seg)?;
            let x_bits = x0 * plane_samples * usize::from(layout.bits);
            if x_bits % 8 != 0 {
                return Err(Error::unsupported(FORMAT, "tiles not starting on a byte boundary"));
            }
            let dst_x = x_bits / 8;
            let copy = seg_row_bytes.min(row_bytes.saturating_sub(dst_x));
            for r in 0..seg_rows.min(rows_left) {
                let (Some(src), Some(dst)) = (
                    seg.get(r * seg_row_bytes..r * seg_row_bytes + copy),
                    raster_plane.get_mut((y0 + r) * row_bytes + dst_x..(y0 + r) * row_bytes + dst_x + copy),
                ) else {
                    break;
                };
                dst.copy_from_slice(src);
            }
        }
    }
    Ok(Raster {
        width,
        height,
        planes: raster_planes,
        row_bytes,
        samples: plane_samples,
        bits: layout.bits,
        order: ifd.order,
    })
}
