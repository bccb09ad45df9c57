//! What every per-format decode target checks: bytes that [`Format::sniff`] identifies as the
//! target's format go through the public [`decode`], and must end in `Ok` or a typed `Err`.
//! Bytes of another format are skipped, so each target's coverage stays on one decoder.
//!
//! Findings: a panic (`decode` returns a decoder's caught panic as `Error::DecoderPanic`, which
//! is raised again here), an abort, an out-of-memory past libFuzzer's `-rss_limit_mb`, an input
//! slower than its `-timeout`, or a decoded image breaking the limits it was decoded under.

use preprocess::{DecodeOptions, Error, Format, Limits, decode};
use std::sync::LazyLock;

/// The pixel limit of the fuzz runs (4 Mpx): a header announcing a large but legal image is
/// refused rather than exhausting the fuzzer's memory.
const MAX_PIXELS: u64 = 1 << 22;

/// The format this binary fuzzes: the one its name (`decode_<format>`) names. A name that names
/// no format read panics (`preprocess`'s `tests/format_table.rs` keeps the names the table's).
pub fn target_format() -> Format {
    static FORMAT: LazyLock<Format> = LazyLock::new(|| {
        let target = env!("CARGO_BIN_NAME");
        let name = target.strip_prefix("decode_").unwrap_or(target);
        Format::ALL
            .iter()
            .copied()
            .find(|f| f.is_decoded() && f.name().eq_ignore_ascii_case(name))
            .unwrap_or_else(|| panic!("the fuzz target `{target}` names no format preprocess reads"))
    });
    *FORMAT
}

/// Decodes `data` when it is `format`; panics on a finding.
pub fn check(format: Format, data: &[u8]) {
    if Format::sniff(data).ok() != Some(format) {
        return;
    }
    let options = DecodeOptions { limits: Limits { max_pixels: MAX_PIXELS }, apply_exif_orientation: true };
    match decode(data, &options) {
        Ok(image) => {
            let (width, height) = (u64::from(image.width()), u64::from(image.height()));
            assert!(width * height <= MAX_PIXELS, "{width}x{height} decoded past the pixel limit");
            assert_eq!(image.data().len() as u64, 3 * width * height);
        }
        Err(Error::DecoderPanic { format, message }) => panic!("the {format} decoder panicked: {message}"),
        Err(_) => {}
    }
}
