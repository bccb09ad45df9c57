//! Which format a file is, recognised from its content as Pillow's `Image.open` recognises it:
//! each plugin's `_accept` test on the first bytes, in the order Pillow registers the plugins
//! (BMP, DIB, GIF, JPEG, PPM, PNG first, then the rest alphabetically), with the header check
//! of TGA's `_open` (it has no `_accept`) in its place, and those of IM, IMT, IPTC, PCD and
//! SPIDER (see [`open_checks`](super::open_checks)) in theirs. The file name plays no part.

use super::bytes::{be16, be32, le16, le32};
use super::open_checks::{self, Check, Header, Verdict};
use crate::{Error, Result};

/// A format Pillow 13 identifies. [`Format::is_decoded`] says which ones this crate reads;
/// the others are refused with [`Error::UnsupportedFormat`] naming them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    Avif,
    Blp,
    Bmp,
    Bufr,
    Cur,
    Dcx,
    Dds,
    /// A bare Windows DIB (`BmpImagePlugin.DibImageFile`).
    Dib,
    Eps,
    Fits,
    Fli,
    Fpx,
    Ftex,
    Gbr,
    Gif,
    Grib,
    Hdf5,
    Icns,
    Ico,
    /// IFUNC/LabEye IM (`ImImagePlugin`).
    Im,
    /// IM Tools (`ImtImagePlugin`).
    Imt,
    /// IPTC/NAA (`IptcImagePlugin`).
    Iptc,
    Jpeg,
    Jpeg2000,
    McIdas,
    Mpeg,
    Msp,
    Pcd,
    Pcx,
    Pixar,
    Png,
    /// PPM, PGM, PBM, PNM and PFM (`PpmImagePlugin`).
    Ppm,
    Psd,
    Qoi,
    Sgi,
    Spider,
    Sun,
    Tga,
    Tiff,
    Webp,
    Wmf,
    XvThumb,
    Xbm,
    Xpm,
}

impl Format {
    /// Pillow's name for the format (`Image.format`), which errors quote.
    pub fn name(self) -> &'static str {
        match self {
            Format::Avif => "AVIF",
            Format::Blp => "BLP",
            Format::Bmp => "BMP",
            Format::Bufr => "BUFR",
            Format::Cur => "CUR",
            Format::Dcx => "DCX",
            Format::Dds => "DDS",
            Format::Dib => "DIB",
            Format::Eps => "EPS",
            Format::Fits => "FITS",
            Format::Fli => "FLI",
            Format::Fpx => "FPX",
            Format::Ftex => "FTEX",
            Format::Gbr => "GBR",
            Format::Gif => "GIF",
            Format::Grib => "GRIB",
            Format::Hdf5 => "HDF5",
            Format::Icns => "ICNS",
            Format::Ico => "ICO",
            Format::Im => "IM",
            Format::Imt => "IMT",
            Format::Iptc => "IPTC",
            Format::Jpeg => "JPEG",
            Format::Jpeg2000 => "JPEG2000",
            Format::McIdas => "MCIDAS",
            Format::Mpeg => "MPEG",
            Format::Msp => "MSP",
            Format::Pcd => "PCD",
            Format::Pcx => "PCX",
            Format::Pixar => "PIXAR",
            Format::Png => "PNG",
            Format::Ppm => "PPM",
            Format::Psd => "PSD",
            Format::Qoi => "QOI",
            Format::Sgi => "SGI",
            Format::Spider => "SPIDER",
            Format::Sun => "SUN",
            Format::Tga => "TGA",
            Format::Tiff => "TIFF",
            Format::Webp => "WEBP",
            Format::Wmf => "WMF",
            Format::XvThumb => "XVThumb",
            Format::Xbm => "XBM",
            Format::Xpm => "XPM",
        }
    }

    /// Whether [`decode`](crate::decode) reads this format (else it refuses it by name).
    pub fn is_decoded(self) -> bool {
        matches!(
            self,
            Format::Avif
                | Format::Jpeg
                | Format::Png
                | Format::Gif
                | Format::Webp
                | Format::Bmp
                | Format::Tiff
                | Format::Dib
                | Format::Ico
                | Format::Cur
                | Format::Ppm
                | Format::Tga
                | Format::Qoi
                | Format::Dds
                | Format::Sgi
                | Format::Pcx
                | Format::Xbm
                | Format::Xpm
                | Format::Sun
                | Format::Msp
                | Format::Psd
                | Format::Dcx
                | Format::XvThumb
                | Format::Imt
                | Format::Spider
                | Format::Gbr
                | Format::Pixar
        )
    }

    /// The format of `bytes`, from its content. [`Error::Empty`] for no bytes,
    /// [`Error::UnknownFormat`] when no Pillow plugin would accept them.
    pub fn sniff(bytes: &[u8]) -> Result<Format> {
        sniff_header(Header { bytes, complete: true })?.ok_or_else(|| Error::malformed("image", "no format decided"))
    }

    /// The `_open` header check that decides after the `_accept` test (or instead of it, for a
    /// plugin registered without one): a file whose `_open` fails goes on to the next plugin.
    fn open_check(self) -> Option<Check> {
        match self {
            Format::Im => Some(open_checks::is_im),
            Format::Imt => Some(open_checks::is_imt),
            Format::Iptc => Some(open_checks::is_iptc),
            Format::Pcd => Some(open_checks::is_pcd),
            Format::Spider => Some(open_checks::is_spider),
            Format::Gbr => Some(open_checks::is_gbr),
            Format::Cur => Some(open_checks::is_cur),
            Format::Pixar => Some(super::pixar::is_pixar),
            Format::Xbm => Some(super::xbm::is_xbm),
            Format::Sun => Some(super::sun::is_sun),
            Format::Msp => Some(super::msp::is_msp),
            _ => None,
        }
    }
}

/// The format of a file from its first bytes, as [`Format::sniff`]; `Ok(None)` when `header`
/// is incomplete and a header check needs more of it to decide. A format found, and an
/// [`Error::UnknownFormat`], are final: more bytes would not change them.
pub(crate) fn sniff_header(header: Header<'_>) -> Result<Option<Format>> {
    let bytes = header.bytes;
    if bytes.is_empty() && header.complete {
        return Err(Error::Empty);
    }
    for &(format, accept) in ACCEPT {
        let verdict = match format.open_check() {
            _ if !accept(bytes) => Verdict::No,
            Some(check) => check(header),
            None => Verdict::Yes,
        };
        match verdict {
            Verdict::Yes => return Ok(Some(format)),
            Verdict::No => {}
            Verdict::NeedMore => return Ok(None),
        }
    }
    Err(Error::UnknownFormat { magic: bytes.iter().take(8).copied().collect() })
}

type Accept = fn(&[u8]) -> bool;

/// Bytes every `_accept` test decides on (the TGA header is the longest).
pub(crate) const SNIFF_BYTES: usize = 18;

/// Bytes the header checks of PCD (4096 covers its 2048 + 1539) and SPIDER (108) need, and
/// enough to reject any other file that starts with no IM, IMT or IPTC header.
pub(crate) const HEADER_SNIFF_BYTES: usize = 4096;

/// The `_accept` entry of a plugin that has none: every file reaches its `_open`, whose
/// header check ([`Format::open_check`]) decides.
const NO_ACCEPT: Accept = |_| true;

const OLE_MAGIC: &[u8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";

/// Pillow's `_accept` functions in registration order: `preinit` (BMP, GIF, JPEG, PPM, PNG),
/// then `init`'s alphabetical plugin list.
const ACCEPT: &[(Format, Accept)] = &[
    (Format::Bmp, |b| b.starts_with(b"BM")),
    (Format::Dib, |b| le32(b, 0).is_some_and(|n| [12, 40, 52, 56, 64, 108, 124].contains(&n))),
    (Format::Gif, |b| b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a")),
    (Format::Jpeg, |b| b.starts_with(b"\xFF\xD8\xFF")),
    (Format::Ppm, |b| b.len() >= 2 && b[0] == b'P' && b"0123456fy".contains(&b[1])),
    (Format::Png, |b| b.starts_with(b"\x89PNG\r\n\x1a\n")),
    (Format::Avif, |b| b.get(4..8) == Some(b"ftyp") && b.get(8..12).is_some_and(is_avif_brand)),
    (Format::Blp, |b| b.starts_with(b"BLP1") || b.starts_with(b"BLP2")),
    (Format::Bufr, |b| b.starts_with(b"BUFR") || b.starts_with(b"ZCZC")),
    (Format::Cur, |b| b.starts_with(b"\0\0\x02\0")),
    (Format::Dcx, |b| le32(b, 0) == Some(0x3ADE_68B1)),
    (Format::Dds, |b| b.starts_with(b"DDS ")),
    (Format::Eps, |b| b.starts_with(b"%!PS") || le32(b, 0) == Some(0xC6D3_D0C5)),
    (Format::Fits, |b| b.starts_with(b"SIMPLE")),
    (Format::Fli, |b| {
        b.len() >= 16
            && le16(b, 4).is_some_and(|m| m == 0xAF11 || m == 0xAF12)
            && le16(b, 14).is_some_and(|f| f == 0 || f == 3)
    }),
    (Format::Fpx, |b| b.starts_with(OLE_MAGIC)),
    (Format::Ftex, |b| b.starts_with(b"FTEX")),
    (Format::Gbr, |b| be32(b, 0).is_some_and(|size| size >= 20) && matches!(be32(b, 4), Some(1 | 2))),
    (Format::Grib, |b| b.len() >= 8 && b.starts_with(b"GRIB") && b[7] == 1),
    (Format::Hdf5, |b| b.starts_with(b"\x89HDF\r\n\x1a\n")),
    (Format::Icns, |b| b.starts_with(b"icns")),
    (Format::Ico, |b| b.starts_with(b"\0\0\x01\0")),
    (Format::Im, NO_ACCEPT),
    (Format::Imt, NO_ACCEPT),
    (Format::Iptc, NO_ACCEPT),
    (Format::Jpeg2000, |b| b.starts_with(b"\xFF\x4F\xFF\x51") || b.starts_with(b"\0\0\0\x0cjP  \r\n\x87\n")),
    (Format::McIdas, |b| b.starts_with(b"\0\0\0\0\0\0\0\x04")),
    (Format::Mpeg, |b| b.starts_with(b"\0\0\x01\xB3")),
    (Format::Msp, |b| b.starts_with(b"DanM") || b.starts_with(b"LinS")),
    (Format::Pcd, NO_ACCEPT),
    (Format::Pcx, |b| b.len() >= 2 && b[0] == 10 && [0, 2, 3, 5].contains(&b[1])),
    (Format::Pixar, |b| b.starts_with(b"\x80\xE8\0\0")),
    (Format::Psd, |b| b.starts_with(b"8BPS")),
    (Format::Qoi, |b| b.starts_with(b"qoif")),
    (Format::Sgi, |b| be16(b, 0) == Some(474)),
    (Format::Spider, NO_ACCEPT),
    (Format::Sun, |b| be32(b, 0) == Some(0x59A6_6A95)),
    (Format::Tga, is_tga),
    (Format::Tiff, |b| {
        [b"MM\0\x2a", b"II\x2a\0", b"MM\x2a\0", b"II\0\x2a", b"MM\0\x2b", b"II\x2b\0"].iter().any(|p| b.starts_with(*p))
    }),
    (Format::Webp, |b| {
        b.starts_with(b"RIFF")
            && b.get(8..12) == Some(b"WEBP")
            && matches!(b.get(12..16), Some(b"VP8 " | b"VP8X" | b"VP8L"))
    }),
    (Format::Wmf, |b| b.starts_with(b"\xD7\xCD\xC6\x9A\0\0") || b.starts_with(b"\x01\0\0\0")),
    (Format::XvThumb, |b| b.starts_with(b"P7 332")),
    (Format::Xbm, |b| b.starts_with(b"#define") || b.starts_with(b"\n#define") || b.starts_with(b"/*")),
    (Format::Xpm, |b| b.starts_with(b"/* XPM */")),
];

fn is_avif_brand(brand: &[u8]) -> bool {
    matches!(brand, b"avif" | b"avis" | b"mif1" | b"msf1")
}

/// `TgaImagePlugin._open`'s checks that raise `SyntaxError` (it has no `_accept`), so that a
/// file failing them falls through to the next plugins as in `Image.open`: a colour-map type
/// of 0 or 1, a non-zero width and height, a pixel depth of 1, 8, 16, 24 or 32, an image type
/// of 1, 2, 3, 9, 10 or 11, and with a colour map, a map depth of 16, 24 or 32.
fn is_tga(b: &[u8]) -> bool {
    b.len() >= 18
        && b[1] <= 1
        && le16(b, 12).is_some_and(|w| w > 0)
        && le16(b, 14).is_some_and(|h| h > 0)
        && [1, 8, 16, 24, 32].contains(&b[16])
        && [1, 2, 3, 9, 10, 11].contains(&b[2])
        && (b[1] == 0 || [16, 24, 32].contains(&b[7]))
}
