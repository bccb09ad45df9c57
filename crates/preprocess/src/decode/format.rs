//! The formats: one table, one row per format Pillow 13 identifies, in the order `Image.open`
//! tries its plugins (`preinit`'s BMP, DIB, GIF, JPEG, PPM, PNG, then `init`'s alphabetical
//! plugin list). A row says everything about its format: Pillow's name, the plugin's `_accept`
//! test, its `_open` header check, the decoder when this crate reads the format, and the file
//! name extensions its files carry.
//!
//! Everything else asks the table: [`Format`] and its names are generated from it,
//! identification ([`sniff`](super::sniff)) walks its rows in order, [`decode`](crate::decode)
//! dispatches to the row's decoder (a row without one is refused by name), and the fuzz crate
//! builds one `decode_<format>` target per row with a decoder (`fuzz/Cargo.toml`'s generated
//! section, kept equal to the table by `tests/format_table.rs`). Adding a format is a row here
//! and its decoder file (declared in `decode/mod.rs`).

use super::Decoded;
use super::bytes::{be16, be32, le16, le32};
use super::open_checks::Check;
use crate::{Limits, Result};

/// A plugin's `_accept`: whether the first bytes ([`SNIFF_BYTES`](super::sniff::SNIFF_BYTES)
/// at most, fewer for a shorter file) may be the format.
pub(crate) type Accept = fn(&[u8]) -> bool;

/// A decoder: the whole file to RGB8 and its orientation, the size checked against the limits
/// before any pixel buffer is allocated.
pub(crate) type Decoder = fn(&[u8], &Limits) -> Result<Decoded>;

/// One row of the table.
#[derive(Clone, Copy)]
pub(crate) struct FormatRow {
    /// Pillow's name (`Image.format`), which errors quote.
    pub name: &'static str,
    /// The plugin's `_accept`; `None` for a plugin registered without one (every file reaches
    /// its `_open`).
    pub accept: Option<Accept>,
    /// The plugin's `_open`, as far as it decides whether the file is the format: checked
    /// after `accept` passes, and a file it refuses goes on to the next row. `None` where
    /// `_accept` decides alone.
    pub check: Option<Check>,
    /// How this crate reads the format; `None` for a format it only identifies.
    pub decoder: Option<Decoder>,
    /// The file name extensions of the format (Pillow's `register_extensions`, and any others
    /// its files in Pillow's test images carry), lower case, without the dot. Identification
    /// never looks at them; they choose the seeds of the format's fuzz target.
    pub extensions: &'static [&'static str],
}

/// Generates [`Format`] (one variant per row, in the table's order, with a doc line saying
/// whether it is read) and [`FORMATS`] (the rows, indexed by `Format as usize`). A row's
/// `check` and `decoder` are paths from `decode/`, where the decoder files sit (`bmp::decode`).
macro_rules! format_table {
    (@some) => { None };
    (@some $value:expr) => { Some($value) };
    (@read) => {
        "Identified only: [`decode`](crate::decode) refuses it with \
         [`Error::UnsupportedFormat`](crate::Error::UnsupportedFormat)."
    };
    (@read $($decoder:tt)+) => { "Read by [`decode`](crate::decode)." };
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident {
            name: $name:literal,
            $(accept: $accept:expr,)?
            $(check: $($check:ident)::+,)?
            $(decoder: $($decoder:ident)::+,)?
            extensions: [$($extension:literal),*],
        }
    )*) => {
        /// A format Pillow 13 identifies, in the order `Image.open` tries them ([`Format::ALL`]).
        /// [`Format::is_decoded`] says which ones this crate reads; the others are refused with
        /// [`Error::UnsupportedFormat`](crate::Error::UnsupportedFormat) naming them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Format {
            $(
                $(#[doc = $doc])*
                #[doc = concat!("\n\n`", $name, "`. ", format_table!(@read $($($decoder)::+)?))]
                $variant,
            )*
        }

        impl Format {
            /// Every format, in the order `Image.open` tries them.
            pub const ALL: &[Format] = &[$(Format::$variant),*];
        }

        /// The rows, in [`Format`]'s order.
        pub(crate) static FORMATS: &[FormatRow] = &[$(
            FormatRow {
                name: $name,
                accept: format_table!(@some $($accept)?),
                check: format_table!(@some $(super::$($check)::+)?),
                decoder: format_table!(@some $(super::$($decoder)::+)?),
                extensions: &[$($extension),*],
            },
        )*];
    };
}

format_table! {
    Bmp { name: "BMP", accept: |b| b.starts_with(b"BM"), decoder: bmp::decode, extensions: ["bmp"], }
    /// A bare Windows DIB (`BmpImagePlugin.DibImageFile`).
    Dib {
        name: "DIB",
        accept: |b| le32(b, 0).is_some_and(|n| [12, 40, 52, 56, 64, 108, 124].contains(&n)),
        decoder: bmp::decode_dib,
        extensions: ["dib"],
    }
    Gif {
        name: "GIF",
        accept: |b| b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a"),
        decoder: gif::decode,
        extensions: ["gif"],
    }
    Jpeg {
        name: "JPEG",
        accept: |b| b.starts_with(b"\xFF\xD8\xFF"),
        decoder: jpeg::decode,
        extensions: ["jfif", "jpe", "jpg", "jpeg", "mpo"],
    }
    /// PPM, PGM, PBM, PNM and PFM (`PpmImagePlugin`).
    Ppm {
        name: "PPM",
        accept: |b| b.len() >= 2 && b[0] == b'P' && b"0123456fy".contains(&b[1]),
        decoder: ppm::decode,
        extensions: ["pbm", "pgm", "ppm", "pnm", "pfm"],
    }
    Png {
        name: "PNG",
        accept: |b| b.starts_with(b"\x89PNG\r\n\x1a\n"),
        decoder: png::decode,
        extensions: ["png", "apng"],
    }
    Avif {
        name: "AVIF",
        accept: |b| b.get(4..8) == Some(b"ftyp") && b.get(8..12).is_some_and(is_avif_brand),
        decoder: avif::decode,
        extensions: ["avif", "avifs"],
    }
    Blp {
        name: "BLP",
        accept: |b| b.starts_with(b"BLP1") || b.starts_with(b"BLP2"),
        check: blp::is_blp,
        decoder: blp::decode,
        extensions: ["blp"],
    }
    Bufr { name: "BUFR", accept: |b| b.starts_with(b"BUFR") || b.starts_with(b"ZCZC"), extensions: ["bufr"], }
    Cur {
        name: "CUR",
        accept: |b| b.starts_with(b"\0\0\x02\0"),
        check: ico::is_cur,
        decoder: ico::decode_cur,
        extensions: ["cur"],
    }
    Dcx { name: "DCX", accept: |b| le32(b, 0) == Some(0x3ADE_68B1), decoder: dcx::decode, extensions: ["dcx"], }
    Dds { name: "DDS", accept: |b| b.starts_with(b"DDS "), decoder: dds::decode, extensions: ["dds"], }
    Eps {
        name: "EPS",
        accept: |b| b.starts_with(b"%!PS") || le32(b, 0) == Some(0xC6D3_D0C5),
        extensions: ["ps", "eps"],
    }
    Fits {
        name: "FITS",
        accept: |b| b.starts_with(b"SIMPLE"),
        check: fits::is_fits,
        decoder: fits::decode,
        extensions: ["fit", "fits"],
    }
    Fli {
        name: "FLI",
        accept: |b| {
            b.len() >= 16
                && le16(b, 4).is_some_and(|m| m == 0xAF11 || m == 0xAF12)
                && le16(b, 14).is_some_and(|f| f == 0 || f == 3)
        },
        check: fli::is_fli,
        decoder: fli::decode,
        extensions: ["fli", "flc"],
    }
    Fpx { name: "FPX", accept: |b| b.starts_with(OLE_MAGIC), extensions: ["fpx"], }
    Ftex {
        name: "FTEX",
        accept: |b| b.starts_with(b"FTEX"),
        check: ftex::is_ftex,
        decoder: ftex::decode,
        extensions: ["ftc", "ftu"],
    }
    Gbr {
        name: "GBR",
        accept: |b| be32(b, 0).is_some_and(|size| size >= 20) && matches!(be32(b, 4), Some(1 | 2)),
        check: gbr::is_gbr,
        decoder: gbr::decode,
        extensions: ["gbr"],
    }
    Grib { name: "GRIB", accept: |b| b.len() >= 8 && b.starts_with(b"GRIB") && b[7] == 1, extensions: ["grib"], }
    Hdf5 { name: "HDF5", accept: |b| b.starts_with(b"\x89HDF\r\n\x1a\n"), extensions: ["h5", "hdf"], }
    Icns {
        name: "ICNS",
        accept: |b| b.starts_with(b"icns"),
        check: icns::is_icns,
        decoder: icns::decode,
        extensions: ["icns"],
    }
    Ico { name: "ICO", accept: |b| b.starts_with(b"\0\0\x01\0"), decoder: ico::decode_ico, extensions: ["ico"], }
    /// IFUNC/LabEye IM (`ImImagePlugin`).
    Im { name: "IM", check: im::is_im, decoder: im::decode, extensions: ["im"], }
    /// IM Tools (`ImtImagePlugin`).
    Imt { name: "IMT", check: imt::is_imt, decoder: imt::decode, extensions: ["imt"], }
    /// IPTC/NAA (`IptcImagePlugin`).
    Iptc { name: "IPTC", check: open_checks::is_iptc, extensions: ["iim"], }
    Jpeg2000 {
        name: "JPEG2000",
        accept: |b| b.starts_with(b"\xFF\x4F\xFF\x51") || b.starts_with(b"\0\0\0\x0cjP  \r\n\x87\n"),
        decoder: jpeg2000::decode,
        extensions: ["jp2", "j2k", "jpc", "jpf", "jpx", "j2c"],
    }
    McIdas {
        name: "MCIDAS",
        accept: |b| b.starts_with(b"\0\0\0\0\0\0\0\x04"),
        check: mcidas::is_mcidas,
        decoder: mcidas::decode,
        extensions: ["ara"],
    }
    Mpeg { name: "MPEG", accept: |b| b.starts_with(b"\0\0\x01\xB3"), extensions: ["mpg", "mpeg"], }
    Msp {
        name: "MSP",
        accept: |b| b.starts_with(b"DanM") || b.starts_with(b"LinS"),
        check: msp::is_msp,
        decoder: msp::decode,
        extensions: ["msp"],
    }
    Pcd { name: "PCD", check: pcd::is_pcd, decoder: pcd::decode, extensions: ["pcd"], }
    Pcx {
        name: "PCX",
        accept: |b| b.len() >= 2 && b[0] == 10 && [0, 2, 3, 5].contains(&b[1]),
        decoder: pcx::decode,
        extensions: ["pcx"],
    }
    Pixar {
        name: "PIXAR",
        accept: |b| b.starts_with(b"\x80\xE8\0\0"),
        check: pixar::is_pixar,
        decoder: pixar::decode,
        extensions: ["pxr"],
    }
    Psd { name: "PSD", accept: |b| b.starts_with(b"8BPS"), decoder: psd::decode, extensions: ["psd"], }
    Qoi { name: "QOI", accept: |b| b.starts_with(b"qoif"), decoder: qoi::decode, extensions: ["qoi"], }
    Sgi {
        name: "SGI",
        accept: |b| be16(b, 0) == Some(474),
        decoder: sgi::decode,
        extensions: ["bw", "rgb", "rgba", "sgi"],
    }
    Spider { name: "SPIDER", check: spider::is_spider, decoder: spider::decode, extensions: ["spider"], }
    Sun {
        name: "SUN",
        accept: |b| be32(b, 0) == Some(0x59A6_6A95),
        check: sun::is_sun,
        decoder: sun::decode,
        extensions: ["ras", "im1"],
    }
    Tga { name: "TGA", check: tga::is_tga, decoder: tga::decode, extensions: ["tga", "icb", "vda", "vst"], }
    Tiff {
        name: "TIFF",
        accept: |b| {
            [b"MM\0\x2a", b"II\x2a\0", b"MM\x2a\0", b"II\0\x2a", b"MM\0\x2b", b"II\x2b\0"]
                .iter()
                .any(|p| b.starts_with(*p))
        },
        decoder: tiff::decode,
        extensions: ["tif", "tiff"],
    }
    Webp {
        name: "WEBP",
        accept: |b| {
            b.starts_with(b"RIFF")
                && b.get(8..12) == Some(b"WEBP")
                && matches!(b.get(12..16), Some(b"VP8 " | b"VP8X" | b"VP8L"))
        },
        decoder: webp::decode,
        extensions: ["webp"],
    }
    Wmf {
        name: "WMF",
        accept: |b| b.starts_with(b"\xD7\xCD\xC6\x9A\0\0") || b.starts_with(b"\x01\0\0\0"),
        extensions: ["wmf", "emf"],
    }
    XvThumb { name: "XVThumb", accept: |b| b.starts_with(b"P7 332"), decoder: xvthumb::decode, extensions: ["p7"], }
    Xbm {
        name: "XBM",
        accept: |b| b.starts_with(b"#define") || b.starts_with(b"\n#define") || b.starts_with(b"/*"),
        check: xbm::is_xbm,
        decoder: xbm::decode,
        extensions: ["xbm"],
    }
    Xpm { name: "XPM", accept: |b| b.starts_with(b"/* XPM */"), decoder: xpm::decode, extensions: ["xpm"], }
}

const OLE_MAGIC: &[u8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";

fn is_avif_brand(brand: &[u8]) -> bool {
    matches!(brand, b"avif" | b"avis" | b"mif1" | b"msf1")
}

impl Format {
    /// This format's row of the table.
    pub(crate) fn row(self) -> &'static FormatRow {
        &FORMATS[self as usize]
    }

    /// Pillow's name for the format (`Image.format`), which errors quote.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// Whether [`decode`](crate::decode) reads this format (else it refuses it by name).
    pub fn is_decoded(self) -> bool {
        self.row().decoder.is_some()
    }

    /// The file name extensions of the format (Pillow's `register_extensions`, and any others
    /// its files in Pillow's test images carry), lower case, without the dot. Identification
    /// never looks at them.
    pub fn extensions(self) -> &'static [&'static str] {
        self.row().extensions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_exactly_one_row_and_finds_it() {
        assert_eq!(Format::ALL.len(), FORMATS.len());
        for (i, &format) in Format::ALL.iter().enumerate() {
            assert_eq!(format as usize, i, "{format:?} is not at its row");
            assert_eq!(Format::ALL.iter().filter(|&&f| f == format).count(), 1, "{format:?}");
            assert!(std::ptr::eq(format.row(), &FORMATS[i]), "{format:?}");
        }
    }

    #[test]
    fn names_are_distinct_and_match_the_variants() {
        for (i, a) in FORMATS.iter().enumerate() {
            assert!(FORMATS[i + 1..].iter().all(|b| b.name != a.name), "{} is named twice", a.name);
            let variant = format!("{:?}", Format::ALL[i]);
            assert!(variant.eq_ignore_ascii_case(a.name), "{variant} is named {}", a.name);
        }
    }

    #[test]
    fn every_row_can_be_identified_and_extensions_are_lower_case() {
        for row in FORMATS {
            assert!(row.accept.is_some() || row.check.is_some(), "{}: no test decides it", row.name);
            for extension in row.extensions {
                assert!(!extension.starts_with('.'), "{}: {extension}", row.name);
                assert_eq!(*extension, extension.to_ascii_lowercase(), "{}", row.name);
            }
        }
    }
}
