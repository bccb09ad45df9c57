//! What a plugin's `_open` header check is written with, and the check of the plugin this
//! crate identifies but does not read (IPTC).
//!
//! `Image.open` runs a plugin's `_open` on a file its `_accept` let through (on any file, for a
//! plugin registered without an `_accept`), and the file is the plugin's when `_open` returns
//! with a mode and a non-zero size. A check decides as its plugin's `_open` does, with the
//! same outcome where `_open` would raise ([`Verdict::No`]; the reference then tries the
//! next plugin, or fails to open the file at all). Each format's check is named in its row of
//! the format table (`format.rs`); a format this crate reads has its check in its decoder
//! file, beside the header parse the decoder shares.
//!
//! The checks see a [`Header`]: the file's first bytes and whether they are the whole file. A
//! check that would read past the bytes of an incomplete header answers
//! [`Verdict::NeedMore`], so that [`open`](crate::open) reads more before deciding.

/// A header check's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The plugin's `_open` accepts the file.
    Yes,
    /// It does not (it raised, or found no mode or size).
    No,
    /// The bytes end before the check could decide; only for an incomplete header.
    NeedMore,
}

/// The first bytes of a file; `complete` when they are all of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header<'a> {
    pub bytes: &'a [u8],
    pub complete: bool,
}

/// A header check ([`Verdict`] for a [`Header`]).
pub(crate) type Check = fn(Header<'_>) -> Verdict;

/// Marks a read past the end of an incomplete header.
pub(crate) struct NeedMore;

/// A Python file object over the header: reads are short at the end of a complete file, and
/// [`NeedMore`] past the end of an incomplete one.
pub(crate) struct Reader<'a> {
    header: Header<'a>,
    /// The position of the next read.
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(header: Header<'a>) -> Self {
        Reader { header, pos: 0 }
    }

    /// `fp.read(n)`.
    pub fn read(&mut self, n: usize) -> Result<&'a [u8], NeedMore> {
        let bytes = self.header.bytes;
        let end = self.pos.saturating_add(n);
        if end > bytes.len() && !self.header.complete {
            return Err(NeedMore);
        }
        let end = end.min(bytes.len());
        let data = bytes.get(self.pos.min(end)..end).unwrap_or(&[]);
        self.pos = end;
        Ok(data)
    }

    /// `fp.readline()`: up to and including the next `\n`, or to the end of the file.
    pub fn readline(&mut self) -> Result<&'a [u8], NeedMore> {
        self.readline_max(usize::MAX)
    }

    /// `fp.readline(size)`: as [`readline`](Self::readline), at most `size` bytes.
    pub fn readline_max(&mut self, size: usize) -> Result<&'a [u8], NeedMore> {
        let rest = self.header.bytes.get(self.pos..).unwrap_or(&[]);
        match rest.iter().take(size).position(|&b| b == b'\n') {
            Some(i) => self.read(i + 1),
            None if rest.len() >= size => self.read(size),
            None if self.header.complete => self.read(rest.len()),
            None => Err(NeedMore),
        }
    }
}

/// Runs a check written with `?` on reads: a read past an incomplete header is `NeedMore`.
pub(crate) fn verdict(check: impl FnOnce() -> Result<bool, NeedMore>) -> Verdict {
    match check() {
        Ok(true) => Verdict::Yes,
        Ok(false) => Verdict::No,
        Err(NeedMore) => Verdict::NeedMore,
    }
}

/// Python's `int(s)` on ASCII text: surrounding whitespace, a sign, decimal digits with single
/// underscores between them.
pub(crate) fn python_int(text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?.trim();
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
        return None;
    }
    text.replace('_', "").parse().ok()
}

/// An IPTC field: its (record, dataset) tag and its data (`None` for length 0).
type IptcField<'a> = ((u8, u8), Option<&'a [u8]>);

/// `IptcImagePlugin._open`: IPTC/NAA fields (`0x1C`, record, dataset, length) up to the image
/// data field (8:10) or a zero field; the file is IPTC when field 3:60 gives mode L, RGB or
/// CMYK, fields 3:20 and 3:30 a non-zero size and field 3:120 compression 1 or 5.
pub(crate) fn is_iptc(header: Header<'_>) -> Verdict {
    verdict(|| {
        let mut r = Reader::new(header);
        // Each field's tag (record, dataset) and data in file order; `None` for length 0.
        let mut fields: Vec<IptcField<'_>> = Vec::new();
        loop {
            let s = r.read(5)?;
            if s.iter().all(|&b| b == 0) {
                break;
            }
            let (Some(&marker), Some(&record), Some(&dataset)) = (s.first(), s.get(1), s.get(2)) else {
                return Ok(false);
            };
            if marker != 0x1C || ![1, 2, 3, 4, 5, 6, 7, 8, 9, 240].contains(&record) {
                return Ok(false);
            }
            let Some(&length) = s.get(3) else { return Ok(false) };
            let size = match length {
                133.. => return Ok(false),
                128 => 0,
                129..=132 => {
                    let bytes = r.read(usize::from(length - 128))?;
                    bytes.iter().fold(0usize, |n, &b| (n << 8) | usize::from(b))
                }
                _ => match s.get(4) {
                    Some(&low) => usize::from(u16::from_be_bytes([length, low])),
                    None => return Ok(false),
                },
            };
            if (record, dataset) == (8, 10) {
                break;
            }
            let data = if size > 0 { Some(r.read(size)?) } else { None };
            fields.push(((record, dataset), data));
        }
        // `self.info[tag]`: a field that appears once, with data.
        let single = |tag: (u8, u8)| {
            let mut values = fields.iter().filter(|(t, _)| *t == tag);
            match (values.next(), values.next()) {
                (Some((_, data)), None) => *data,
                _ => None,
            }
        };
        let int =
            |tag| single(tag).map(|d: &[u8]| d.iter().rev().take(4).rev().fold(0u32, |n, &b| (n << 8) | u32::from(b)));
        let Some(&[layers, component, ..]) = single((3, 60)) else { return Ok(false) };
        let mode = match (layers, component) {
            (1, 0) => true,
            (3 | 4, c) => c != 0,
            _ => false,
        };
        // `self.info[(3, 65)][0] - 1` when the field is there.
        let band_ok = || !fields.iter().any(|(t, _)| *t == (3, 65)) || single((3, 65)).is_some_and(|d| !d.is_empty());
        if !mode || (layers != 1 && !band_ok()) {
            return Ok(false);
        }
        let (Some(width), Some(height)) = (int((3, 20)), int((3, 30))) else { return Ok(false) };
        Ok(matches!(int((3, 120)), Some(1 | 5)) && width > 0 && height > 0)
    })
}
