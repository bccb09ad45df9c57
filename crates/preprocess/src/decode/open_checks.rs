//! The header checks of the plugins Pillow registers without an `_accept` (IM, IMT, IPTC,
//! PCD, SPIDER): `Image.open` runs their `_open` on any file that reaches them, and the file is
//! theirs when `_open` returns with a mode and a non-zero size. Each check below follows its
//! plugin's `_open` read for read, with the same outcome where `_open` would raise (`No`; the
//! reference then tries the next plugin, or fails to open the file at all).
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

/// `ImImagePlugin._open`: a text header of `Key: value` lines (each under 100 bytes, at least
/// one with a known key) ended by `\0` or `\x1a`, then `\x1a` before the data; the size
/// (default 512x512) must be two positive numbers and a lookup table, when announced, 768 bytes long.
pub(crate) fn is_im(header: Header<'_>) -> Verdict {
    const TAGS: [&[u8]; 9] = [
        b"Comment",
        b"Date",
        b"Digitalization equipment",
        b"File size (no of images)",
        b"Lut",
        b"Name",
        b"Scale (x,y)",
        b"Image size (x*y)",
        b"Image type",
    ];
    const NUMERIC: [&[u8]; 3] = [b"File size (no of images)", b"Scale (x,y)", b"Image size (x*y)"];
    verdict(|| {
        let mut r = Reader::new(header);
        if !r.read(100)?.contains(&b'\n') {
            return Ok(false);
        }
        r.pos = 0;
        let (mut known, mut size_ok, mut has_lut, mut mode_ok) = (0, true, false, true);
        let ended_by = loop {
            let first = r.read(1)?;
            if first == b"\r" {
                continue;
            }
            if matches!(first, [] | [0] | [0x1A]) {
                break first;
            }
            let rest = r.readline()?;
            if 1 + rest.len() > 100 {
                return Ok(false);
            }
            let mut line = [first, rest].concat();
            if line.ends_with(b"\r\n") {
                line.truncate(line.len() - 2);
            } else if line.ends_with(b"\n") {
                line.truncate(line.len() - 1);
            }
            // `^([A-Za-z][^:]*):[ \t]*(.*)[ \t]*$`
            let Some(colon) = line.iter().position(|&b| b == b':').filter(|_| line[0].is_ascii_alphabetic()) else {
                return Ok(false);
            };
            let key = &line[..colon];
            let value = line[colon + 1..].trim_ascii_start();
            if NUMERIC.contains(&key) {
                let text: Vec<u8> = value.iter().map(|&b| if b == b'*' { b',' } else { b }).collect();
                let numbers: Option<Vec<f64>> = text
                    .split(|&b| b == b',')
                    .map(|n| {
                        python_int(n).map(|i| i as f64).or_else(|| std::str::from_utf8(n).ok()?.trim().parse().ok())
                    })
                    .collect();
                // Pillow's `number` raises ValueError on anything else.
                let Some(numbers) = numbers else { return Ok(false) };
                if key == b"Image size (x*y)" {
                    size_ok = numbers.len() == 2 && numbers.iter().all(|&n| n > 0.0);
                }
            }
            if key == b"Image type" {
                mode_ok = !value.is_empty();
            }
            has_lut |= key == b"Lut";
            known += usize::from(TAGS.contains(&key));
        };
        if known == 0 || !size_ok || !mode_ok {
            return Ok(false);
        }
        let mut at = ended_by;
        while !at.is_empty() && at != b"\x1a" {
            at = r.read(1)?;
        }
        if at.is_empty() {
            return Ok(false);
        }
        Ok(!has_lut || r.read(768)?.len() == 768)
    })
}

/// `ImtImagePlugin._open`: `key value` lines (`[a-z]* [^ \r\n]*`, `*` starting a comment)
/// read 100 bytes at a time, up to a `\x0c`; the file is IMT when it names `pixel n8` and a
/// positive `width` and `height`.
pub(crate) fn is_imt(header: Header<'_>) -> Verdict {
    verdict(|| Ok(imt_header(header)?.is_some()))
}

/// What an IMT header gives: the size and where the pixels start (after the `\x0c`; `None`
/// without one, when Pillow has no tile to load).
pub(crate) struct ImtHeader {
    pub width: i64,
    pub height: i64,
    pub data_offset: Option<usize>,
}

/// `ImtImagePlugin._open`: the header when the file is IMT (mode `L`, a positive size).
pub(crate) fn imt_header(header: Header<'_>) -> Result<Option<ImtHeader>, NeedMore> {
    let mut r = Reader::new(header);
    let mut buffer = r.read(100)?.to_vec();
    if !buffer.contains(&b'\n') {
        return Ok(None);
    }
    let (mut width, mut height, mut mode_l, mut data_offset) = (0i64, 0i64, false, None);
    loop {
        let mut s = if buffer.is_empty() { r.read(1)?.to_vec() } else { vec![buffer.remove(0)] };
        if s.is_empty() {
            break;
        }
        if s == b"\x0c" {
            data_offset = Some(r.pos - buffer.len());
            break;
        }
        if !buffer.contains(&b'\n') {
            buffer.extend_from_slice(r.read(100)?);
        }
        match buffer.iter().position(|&b| b == b'\n') {
            Some(i) => {
                s.extend_from_slice(&buffer[..i]);
                buffer.drain(..=i);
            }
            None => s.append(&mut buffer),
        }
        if s.len() == 1 || s.len() > 100 {
            break;
        }
        if s[0] == b'*' {
            continue;
        }
        // `([a-z]*) ([^ \r\n]*)`, matched at the start.
        let key_len = s.iter().take_while(|b| b.is_ascii_lowercase()).count();
        if s.get(key_len) != Some(&b' ') {
            break;
        }
        let key = &s[..key_len];
        let value: Vec<u8> = s[key_len + 1..].iter().copied().take_while(|b| !b" \r\n".contains(b)).collect();
        match key {
            // Pillow's `int(v)` raises ValueError on anything else.
            b"width" => match python_int(&value) {
                Some(v) => width = v,
                None => return Ok(None),
            },
            b"height" => match python_int(&value) {
                Some(v) => height = v,
                None => return Ok(None),
            },
            b"pixel" if value == b"n8" => mode_l = true,
            _ => {}
        }
    }
    Ok((mode_l && width > 0 && height > 0).then_some(ImtHeader { width, height, data_offset }))
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

/// `PcdImagePlugin._open`: `PCD_` at byte 2048 and the 1539-byte block there complete.
pub(crate) fn is_pcd(header: Header<'_>) -> Verdict {
    verdict(|| {
        let mut r = Reader::new(header);
        r.read(2048)?;
        let block = r.read(1539)?;
        Ok(block.len() == 1539 && block.starts_with(b"PCD_"))
    })
}

/// `SpiderImagePlugin._open`: 27 float32 header values, big- then little-endian, passing
/// `isSpiderHeader` (integral values at the key positions, a known `iform`, `labbyt = labrec *
/// lenbyt` non-zero), `iform` 1 (a 2D image), a stack layout Pillow opens and a positive size.
pub(crate) fn is_spider(header: Header<'_>) -> Verdict {
    verdict(|| Ok(spider_header(header)?.is_some()))
}

/// What a SPIDER header gives: the size, the byte order of its float32 samples and where they
/// start (the header length, doubled for the first image of a stack; Pillow would seek to a
/// negative one and fail).
pub(crate) struct SpiderHeader {
    pub width: i64,
    pub height: i64,
    pub big_endian: bool,
    pub data_offset: f64,
}

/// `SpiderImagePlugin._open`: the header when the file is a SPIDER 2D image.
pub(crate) fn spider_header(header: Header<'_>) -> Result<Option<SpiderHeader>, NeedMore> {
    let mut r = Reader::new(header);
    let bytes = r.read(108)?;
    if bytes.len() < 108 {
        return Ok(None);
    }
    let values = |big: bool| -> Vec<f64> {
        // Fortran indexing: h[0] is a placeholder.
        std::iter::once(99.0)
            .chain(bytes.chunks_exact(4).map(|c| {
                let b = [c[0], c[1], c[2], c[3]];
                f64::from(if big { f32::from_be_bytes(b) } else { f32::from_le_bytes(b) })
            }))
            .collect()
    };
    let is_int = |f: f64| f.is_finite() && f.trunc() == f;
    let header_len = |h: &[f64]| {
        if [1, 2, 5, 12, 13, 22, 23].iter().any(|&i| !is_int(h[i])) {
            return 0.0;
        }
        let valid = [1.0, 3.0, -11.0, -12.0, -21.0, -22.0].contains(&h[5]) && h[22] == h[13] * h[23];
        if valid { h[22] } else { 0.0 }
    };
    let big = values(true);
    let big_endian = header_len(&big) != 0.0;
    let h = if big_endian { big } else { values(false) };
    let length = header_len(&h);
    if length == 0.0 || h[5] != 1.0 {
        return Ok(None);
    }
    // `int(h[24])`, `int(h[27])` (and `int(h[26])` for a stack) raise on NaN and infinity.
    if !h[24].is_finite() || !h[27].is_finite() {
        return Ok(None);
    }
    let (stack, image) = (h[24].trunc(), h[27].trunc());
    let layout = image == 0.0 && (stack == 0.0 || (stack > 0.0 && h[26].is_finite()));
    let (width, height) = (h[12].trunc(), h[2].trunc());
    let data_offset = if stack > 0.0 { 2.0 * length } else { length };
    Ok((layout && width > 0.0 && height > 0.0).then_some(SpiderHeader {
        width: width.min(i64::MAX as f64) as i64,
        height: height.min(i64::MAX as f64) as i64,
        big_endian,
        data_offset,
    }))
}

/// `GbrImagePlugin._open` as a header check.
pub(crate) fn is_gbr(header: Header<'_>) -> Verdict {
    verdict(|| Ok(gbr_header(header)?.is_some()))
}

/// What a GIMP brush header gives: the size, the bytes per pixel (1: `L`, 4: `RGBA`) and where
/// the pixels start (after the comment; at the end of the file for a version 2 header of 27
/// bytes, whose comment length of -1 makes Pillow's `read` read everything).
pub(crate) struct GbrHeader {
    pub width: u32,
    pub height: u32,
    pub depth: u32,
    pub data_offset: usize,
}

/// `GbrImagePlugin._open`: header size of at least 20, version 1 or 2, a non-zero size, colour
/// depth 1 or 4, and for version 2 the `GIMP` magic, a spacing word (big-endian words) and a
/// header of at least 27 bytes (a shorter one makes the comment's `read` raise ValueError).
pub(crate) fn gbr_header(header: Header<'_>) -> Result<Option<GbrHeader>, NeedMore> {
    let mut r = Reader::new(header);
    let mut word = || -> Result<Option<u32>, NeedMore> { Ok(r.read(4)?.try_into().ok().map(u32::from_be_bytes)) };
    let (Some(header_size), Some(version)) = (word()?, word()?) else { return Ok(None) };
    if header_size < 20 || !matches!(version, 1 | 2) {
        return Ok(None);
    }
    let (Some(width), Some(height)) = (word()?, word()?) else { return Ok(None) };
    if width == 0 || height == 0 {
        return Ok(None);
    }
    let Some(depth @ (1 | 4)) = word()? else { return Ok(None) };
    if version == 2 {
        let magic = word()?;
        if magic != Some(u32::from_be_bytes(*b"GIMP")) || word()?.is_none() {
            return Ok(None);
        }
    }
    let data_offset = match (version, header_size) {
        (2, ..27) => return Ok(None),
        (2, 27) => header.bytes.len(),
        _ => header_size as usize,
    };
    Ok(Some(GbrHeader { width, height, depth, data_offset }))
}

/// `CurImagePlugin._open`, which reads the first (or largest) cursor entry and then the BMP
/// header it points to (`BmpImageFile._bitmap`). `No` where these raise a `SyntaxError` (or an
/// error Pillow turns into one: a short read, an index past the data, no entries) or the size
/// halves to nothing, so the next plugin (TGA, for an uncompressed true-colour TGA, whose
/// bytes start the same) gets the file. `Yes` also where `_bitmap` raises another error (an
/// unknown header size, depth, compression, bit-field layout or palette size): `Image.open`
/// fails with it there, inside the CUR plugin.
pub(crate) fn is_cur(header: Header<'_>) -> Verdict {
    verdict(|| {
        let mut r = Reader::new(header);
        let le16 = |b: &[u8], at: usize| b.get(at..at + 2).map(|s| u32::from(u16::from_le_bytes([s[0], s[1]])));
        let le32 = |b: &[u8], at: usize| b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
        let Some(count) = le16(r.read(6)?, 4) else { return Ok(false) };
        let mut best: &[u8] = &[];
        for _ in 0..count {
            let entry = r.read(16)?;
            if best.is_empty() {
                best = entry;
                continue;
            }
            let (Some(&w), Some(&bw)) = (entry.first(), best.first()) else { return Ok(false) };
            if w > bw {
                let (Some(&h), Some(&bh)) = (entry.get(1), best.get(1)) else { return Ok(false) };
                if h > bh {
                    best = entry;
                }
            }
        }
        let Some(bitmap_at) = le32(best, 12) else { return Ok(false) };
        if bitmap_at != 0 {
            r.pos = bitmap_at as usize;
        }
        let Some(header_size) = le32(r.read(4)?, 0) else { return Ok(false) };
        let rest = header_size.saturating_sub(4) as usize;
        let data = r.read(rest)?;
        if data.len() < rest {
            return Ok(true); // "Truncated File Read"
        }
        let field16 = |at| le16(data, at).unwrap_or(0);
        let field32 = |at| le32(data, at).unwrap_or(0);
        let (width, height, bits, compression, colours) = match header_size {
            12 => (field16(0), field16(2), field16(6), 0, 0),
            40 | 52 | 56 | 64 | 108 | 124 => {
                let flipped = data.get(7) == Some(&0xFF);
                let height = if flipped { 0u32.wrapping_sub(field32(4)) } else { field32(4) };
                (field32(0), height, field16(10), field32(12), field32(28))
            }
            _ => return Ok(true), // "Unsupported BMP header type"
        };
        if compression == 3 {
            let masks: Vec<u32> = if data.len() >= 48 {
                let count = if data.len() >= 52 { 4 } else { 3 };
                (0..count).map(|i| field32(36 + i * 4)).chain((count == 3).then_some(0)).collect()
            } else {
                let mut masks = Vec::new();
                for _ in 0..3 {
                    let Some(mask) = le32(r.read(4)?, 0) else { return Ok(false) };
                    masks.push(mask);
                }
                masks.push(0);
                masks
            };
            let rgba = (masks[0], masks[1], masks[2], masks[3]);
            let rgb = (masks[0], masks[1], masks[2]);
            let supported = match bits {
                32 => [
                    (0xFF0000, 0xFF00, 0xFF, 0),
                    (0xFF000000, 0xFF0000, 0xFF00, 0),
                    (0xFF000000, 0xFF00, 0xFF, 0),
                    (0xFF000000, 0xFF0000, 0xFF00, 0xFF),
                    (0xFF, 0xFF00, 0xFF0000, 0xFF000000),
                    (0xFF0000, 0xFF00, 0xFF, 0xFF000000),
                    (0xFF000000, 0xFF00, 0xFF, 0xFF0000),
                    (0, 0, 0, 0),
                ]
                .contains(&rgba),
                24 => rgb == (0xFF0000, 0xFF00, 0xFF),
                16 => rgb == (0xF800, 0x7E0, 0x1F) || rgb == (0x7C00, 0x3E0, 0x1F),
                _ => false,
            };
            if !supported {
                return Ok(true); // "Unsupported BMP bitfields layout"
            }
        } else if !matches!(compression, 0..=2) {
            return Ok(true); // "Unsupported BMP compression"
        }
        match bits {
            1 | 4 | 8 => {
                let colours = if colours == 0 { 1u64 << bits } else { u64::from(colours) };
                if colours > 65536 {
                    return Ok(true); // "Unsupported BMP Palette size"
                }
            }
            16 | 24 | 32 => {}
            _ => return Ok(true), // "Unsupported BMP pixel depth"
        }
        // The cursor is the bitmap's top half.
        Ok(width > 0 && height / 2 > 0)
    })
}
