//! Which format a file is, recognised from its content as Pillow's `Image.open` recognises it:
//! the rows of the format table ([`FORMATS`]) in order, each plugin's `_accept` on the first
//! bytes and then its `_open` header check; the first row both pass names the format. The file
//! name plays no part.

use super::format::{FORMATS, Format};
use super::open_checks::{Header, Verdict};
use crate::{Error, Result};

/// Bytes every `_accept` test decides on (TGA's header check, which stands in for an
/// `_accept`, reads the longest: 18).
pub(crate) const SNIFF_BYTES: usize = 18;

/// Bytes the header checks of PCD (4096 covers its 2048 + 1539), SPIDER (108) and PIXAR (428)
/// need, and enough to reject any other file that starts with no IM, IMT or IPTC header.
pub(crate) const HEADER_SNIFF_BYTES: usize = 4096;

impl Format {
    /// The format of `bytes`, from its content. [`Error::Empty`] for no bytes,
    /// [`Error::UnknownFormat`] when no Pillow plugin would accept them.
    pub fn sniff(bytes: &[u8]) -> Result<Format> {
        sniff_header(Header { bytes, complete: true })?.ok_or_else(|| Error::malformed("image", "no format decided"))
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
    for (&format, row) in Format::ALL.iter().zip(FORMATS) {
        let verdict = match (row.accept, row.check) {
            (Some(accept), _) if !accept(bytes) => Verdict::No,
            (_, Some(check)) => check(header),
            (_, None) => Verdict::Yes,
        };
        match verdict {
            Verdict::Yes => return Ok(Some(format)),
            Verdict::No => {}
            Verdict::NeedMore => return Ok(None),
        }
    }
    Err(Error::UnknownFormat { magic: bytes.iter().take(8).copied().collect() })
}
