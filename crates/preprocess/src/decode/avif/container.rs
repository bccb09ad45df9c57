//! The HEIF/ISOBMFF container of an AVIF file, read as libavif 1.4.2 reads it for Pillow: the
//! image libavif's `AVIF_DECODER_SOURCE_AUTO` picks (the first colour track's first sample when
//! the major brand is `avis`, else the primary item), its AV1 payload and the properties that
//! change its pixels, and the Exif and XMP items describing it. Every read is bounds-checked.

use crate::{Error, Result};
use std::borrow::Cow;

const FORMAT: &str = "AVIF";

/// An `nclx` colour description (ITU-T H.273 code points).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Nclx {
    pub color_primaries: u16,
    pub matrix_coefficients: u16,
    pub full_range: bool,
}

/// The image to decode and what describes it.
#[derive(Debug, Default)]
pub(super) struct Container<'a> {
    /// The colour image's AV1 payload.
    pub payload: Cow<'a, [u8]>,
    /// `ispe`: the size the file announces.
    pub size: Option<(u32, u32)>,
    pub nclx: Option<Nclx>,
    /// `irot`: counter-clockwise quarter turns.
    pub rotation: Option<u8>,
    /// `imir`: the mirror axis (0: top and bottom swap, 1: left and right swap).
    pub mirror: Option<u8>,
    /// Whether an alpha image (`auxl` with the alpha `auxC`) goes with the colour image.
    pub has_alpha: bool,
    /// The alpha item's AV1 payload, when the colour image is an item.
    pub alpha_payload: Option<Cow<'a, [u8]>>,
    /// Whether the colour is premultiplied by that alpha (`prem`).
    pub premultiplied: bool,
    /// The last Exif item's payload after its TIFF header offset field.
    pub exif: Option<Vec<u8>>,
    pub xmp: Option<Vec<u8>>,
}

/// One box: its type and its payload (header skipped).
#[derive(Clone, Copy)]
struct Bmff<'a> {
    kind: [u8; 4],
    body: &'a [u8],
}

fn malformed(detail: impl ToString) -> Error {
    Error::malformed(FORMAT, detail)
}

/// The boxes of `data`, in order; an error if one runs past the end.
fn boxes(mut data: &[u8]) -> Result<Vec<Bmff<'_>>> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let mut cursor = Cursor(data);
        let size = u64::from(cursor.u32()?);
        let kind = cursor.array::<4>()?;
        let (header, size) = match size {
            1 => (16, cursor.u64()?),
            0 => (8, data.len() as u64),
            n => (8, n),
        };
        let size = usize::try_from(size).map_err(|_| malformed("box size over the address space"))?;
        if size < header || size > data.len() {
            return Err(malformed(format!("box {:?} of {size} bytes in {} bytes", kind_name(kind), data.len())));
        }
        out.push(Bmff { kind, body: &data[header..size] });
        data = &data[size..];
    }
    Ok(out)
}

fn kind_name(kind: [u8; 4]) -> String {
    String::from_utf8_lossy(&kind).into_owned()
}

fn find<'a>(list: &[Bmff<'a>], kind: &[u8; 4]) -> Option<Bmff<'a>> {
    list.iter().find(|b| &b.kind == kind).copied()
}

/// A bounds-checked big-endian reader.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.0.len() {
            return Err(malformed("a box ends early"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }
    /// An unsigned integer of 0, 4 or 8 bytes (`iloc`'s field sizes).
    fn sized(&mut self, bytes: u8) -> Result<u64> {
        match bytes {
            0 => Ok(0),
            4 => Ok(u64::from(self.u32()?)),
            8 => self.u64(),
            n => Err(malformed(format!("iloc field of {n} bytes"))),
        }
    }
    /// A full box's version (its flags are returned too).
    fn version_flags(&mut self) -> Result<(u8, u32)> {
        let v = self.u32()?;
        Ok(((v >> 24) as u8, v & 0x00ff_ffff))
    }
    fn id(&mut self, wide: bool) -> Result<u32> {
        if wide { self.u32() } else { self.u16().map(u32::from) }
    }
}

/// Reads the container: the image libavif would decode for Pillow.
pub(super) fn parse(file: &[u8]) -> Result<Container<'_>> {
    let top = boxes(file)?;
    let ftyp = find(&top, b"ftyp").ok_or_else(|| malformed("no ftyp box"))?;
    let major = ftyp.body.get(..4).ok_or_else(|| malformed("short ftyp box"))?;
    if major == b"avis"
        && let Some(moov) = find(&top, b"moov")
    {
        // libavif reads a sequence's frames and metadata from its tracks, not the file's items.
        return first_track_sample(file, moov.body);
    }
    let meta = find(&top, b"meta").ok_or_else(|| malformed("no meta box"))?;
    Meta::parse(meta.body)?.primary(file)
}

/// An item of the `meta` box.
#[derive(Debug, Default, Clone)]
struct Item {
    id: u32,
    kind: [u8; 4],
    content_type: Vec<u8>,
    /// (construction method, extents as (offset, length)).
    method: u8,
    base: u64,
    extents: Vec<(u64, u64)>,
    properties: Vec<u16>,
}

/// The `meta` box: items, their references and properties.
struct Meta<'a> {
    primary: Option<u32>,
    items: Vec<Item>,
    /// (reference type, from, to).
    references: Vec<([u8; 4], u32, u32)>,
    properties: Vec<Bmff<'a>>,
    idat: &'a [u8],
}

impl<'a> Meta<'a> {
    fn parse(body: &'a [u8]) -> Result<Meta<'a>> {
        let children = boxes(body.get(4..).ok_or_else(|| malformed("short meta box"))?)?;
        let hdlr = find(&children, b"hdlr").ok_or_else(|| malformed("no hdlr box"))?;
        if hdlr.body.get(8..12) != Some(b"pict") {
            return Err(malformed("the meta handler is not 'pict'"));
        }
        let mut meta =
            Meta { primary: None, items: Vec::new(), references: Vec::new(), properties: Vec::new(), idat: &[] };
        if let Some(pitm) = find(&children, b"pitm") {
            let mut c = Cursor(pitm.body);
            let (version, _) = c.version_flags()?;
            meta.primary = Some(c.id(version != 0)?);
        }
        if let Some(idat) = find(&children, b"idat") {
            meta.idat = idat.body;
        }
        if let Some(iloc) = find(&children, b"iloc") {
            meta.read_iloc(iloc.body)?;
        }
        if let Some(iinf) = find(&children, b"iinf") {
            meta.read_iinf(iinf.body)?;
        }
        if let Some(iref) = find(&children, b"iref") {
            let mut c = Cursor(iref.body);
            let (version, _) = c.version_flags()?;
            for reference in boxes(c.0)? {
                let mut r = Cursor(reference.body);
                let from = r.id(version != 0)?;
                for _ in 0..r.u16()? {
                    meta.references.push((reference.kind, from, r.id(version != 0)?));
                }
            }
        }
        if let Some(iprp) = find(&children, b"iprp") {
            meta.read_iprp(iprp.body)?;
        }
        Ok(meta)
    }

    fn item_mut(&mut self, id: u32) -> &mut Item {
        match self.items.iter().position(|i| i.id == id) {
            Some(at) => &mut self.items[at],
            None => {
                self.items.push(Item { id, ..Item::default() });
                let last = self.items.len() - 1;
                &mut self.items[last]
            }
        }
    }

    fn read_iloc(&mut self, body: &[u8]) -> Result<()> {
        let mut c = Cursor(body);
        let (version, _) = c.version_flags()?;
        if version > 2 {
            return Err(malformed(format!("iloc version {version}")));
        }
        let sizes = c.u8()?;
        let (offset_size, length_size) = (sizes >> 4, sizes & 15);
        let sizes = c.u8()?;
        let (base_size, index_size) = (sizes >> 4, if version > 0 { sizes & 15 } else { 0 });
        let count = if version < 2 { u32::from(c.u16()?) } else { c.u32()? };
        for _ in 0..count {
            let id = c.id(version == 2)?;
            let method = if version > 0 { (c.u16()? & 15) as u8 } else { 0 };
            let _data_reference = c.u16()?;
            let base = c.sized(base_size)?;
            let mut extents = Vec::new();
            for _ in 0..c.u16()? {
                c.sized(index_size)?;
                extents.push((c.sized(offset_size)?, c.sized(length_size)?));
            }
            let item = self.item_mut(id);
            (item.method, item.base, item.extents) = (method, base, extents);
        }
        Ok(())
    }

    fn read_iinf(&mut self, body: &[u8]) -> Result<()> {
        let mut c = Cursor(body);
        let (version, _) = c.version_flags()?;
        let _count = c.id(version != 0)?;
        for infe in boxes(c.0)?.into_iter().filter(|b| &b.kind == b"infe") {
            let mut e = Cursor(infe.body);
            let (version, _) = e.version_flags()?;
            if version < 2 {
                continue;
            }
            let id = e.id(version == 3)?;
            let _protection = e.u16()?;
            let kind = e.array::<4>()?;
            let _name = e.0.split(|&b| b == 0).next();
            let after_name = e.0.iter().position(|&b| b == 0).map_or(&[][..], |at| &e.0[at + 1..]);
            let content_type = after_name.split(|&b| b == 0).next().unwrap_or(&[]).to_vec();
            let item = self.item_mut(id);
            item.kind = kind;
            item.content_type = content_type;
        }
        Ok(())
    }

    fn read_iprp(&mut self, body: &'a [u8]) -> Result<()> {
        let children = boxes(body)?;
        if let Some(ipco) = find(&children, b"ipco") {
            self.properties = boxes(ipco.body)?;
        }
        for ipma in children.iter().filter(|b| &b.kind == b"ipma") {
            let mut c = Cursor(ipma.body);
            let (version, flags) = c.version_flags()?;
            for _ in 0..c.u32()? {
                let id = c.id(version >= 1)?;
                let mut indices = Vec::new();
                for _ in 0..c.u8()? {
                    indices.push(if flags & 1 != 0 { c.u16()? & 0x7fff } else { u16::from(c.u8()? & 0x7f) });
                }
                self.item_mut(id).properties.extend(indices);
            }
        }
        Ok(())
    }

    /// The payload of `item`: its extents concatenated (from the file, or from `idat`).
    fn payload(&self, file: &'a [u8], item: &Item) -> Result<Cow<'a, [u8]>> {
        let source = match item.method {
            0 => file,
            1 => self.idat,
            m => return Err(Error::unsupported(FORMAT, format!("item construction method {m}"))),
        };
        let slice = |&(offset, length): &(u64, u64)| -> Result<&'a [u8]> {
            let start = item.base.checked_add(offset).and_then(|s| usize::try_from(s).ok());
            let end = start.and_then(|s| s.checked_add(usize::try_from(length).ok()?));
            match (start, end) {
                (Some(s), Some(e)) if e <= source.len() && (length > 0 || s <= source.len()) => {
                    Ok(&source[s..if length == 0 { source.len() } else { e }])
                }
                _ => Err(Error::Truncated { format: FORMAT, detail: format!("item {} lies past the end", item.id) }),
            }
        };
        match item.extents.as_slice() {
            [one] => Ok(Cow::Borrowed(slice(one)?)),
            many => Ok(Cow::Owned(many.iter().map(slice).collect::<Result<Vec<_>>>()?.concat())),
        }
    }

    fn property(&self, item: &Item, kind: &[u8; 4]) -> Option<&'a [u8]> {
        self.properties_of(item).find(|p| &p.kind == kind).map(|p| p.body)
    }

    fn properties_of<'s>(&'s self, item: &'s Item) -> impl Iterator<Item = Bmff<'a>> + 's {
        item.properties.iter().filter_map(|&i| self.properties.get(usize::from(i).checked_sub(1)?).copied())
    }

    /// The primary item and what describes it.
    fn primary(&self, file: &'a [u8]) -> Result<Container<'a>> {
        let id = self.primary.ok_or_else(|| malformed("no primary item (pitm)"))?;
        let item = self.items.iter().find(|i| i.id == id).ok_or_else(|| malformed("the primary item is missing"))?;
        match &item.kind {
            b"av01" => {}
            b"grid" => return Err(Error::unsupported(FORMAT, "grid images")),
            other => return Err(Error::unsupported(FORMAT, format!("primary item of type {:?}", kind_name(*other)))),
        }
        let payload = self.payload(file, item)?;
        let mut container = Container { payload, ..Container::default() };
        container.size = self.property(item, b"ispe").map(ispe).transpose()?;
        container.nclx = self.properties_of(item).filter(|p| &p.kind == b"colr").find_map(|p| nclx(p.body));
        container.rotation = self.property(item, b"irot").and_then(|b| b.first()).map(|b| b & 3);
        container.mirror = self.property(item, b"imir").and_then(|b| b.first()).map(|b| b & 1);
        let alpha = self.references.iter().find_map(|(kind, from, to)| {
            let alpha = self.items.iter().find(|i| i.id == *from)?;
            let is_alpha = self.property(alpha, b"auxC").is_some_and(|c| c.get(4..).is_some_and(is_alpha_urn));
            (kind == b"auxl" && *to == id && is_alpha).then_some(alpha)
        });
        container.has_alpha = alpha.is_some();
        container.alpha_payload = alpha.map(|alpha| self.payload(file, alpha)).transpose()?;
        container.premultiplied = self.references.iter().any(|(kind, from, _)| kind == b"prem" && *from == id);
        for described in self.items.iter().filter(|i| self.references.contains(&(*b"cdsc", i.id, id))) {
            if &described.kind == b"Exif" {
                let Ok(exif) = self.payload(file, described) else { continue };
                container.exif = Some(exif.get(4..).unwrap_or(&[]).to_vec());
            } else if &described.kind == b"mime" && described.content_type == b"application/rdf+xml" {
                let Ok(xmp) = self.payload(file, described) else { continue };
                container.xmp = Some(xmp.into_owned());
            }
        }
        Ok(container)
    }
}

fn is_alpha_urn(urn: &[u8]) -> bool {
    let urn = urn.split(|&b| b == 0).next().unwrap_or(&[]);
    urn == b"urn:mpeg:mpegB:cicp:systems:auxiliary:alpha" || urn == b"urn:mpeg:hevc:2015:auxid:1"
}

fn ispe(body: &[u8]) -> Result<(u32, u32)> {
    let mut c = Cursor(body);
    c.version_flags()?;
    Ok((c.u32()?, c.u32()?))
}

fn nclx(body: &[u8]) -> Option<Nclx> {
    let mut c = Cursor(body);
    if &c.array::<4>().ok()? != b"nclx" {
        return None;
    }
    let color_primaries = c.u16().ok()?;
    let _transfer = c.u16().ok()?;
    let matrix_coefficients = c.u16().ok()?;
    let full_range = c.u8().ok()? & 0x80 != 0;
    Some(Nclx { color_primaries, matrix_coefficients, full_range })
}

/// The first sample of the first colour track (a track with an `av01` sample entry and no
/// `auxl` track reference), as libavif decodes an image sequence's first frame.
fn first_track_sample<'a>(file: &'a [u8], moov: &'a [u8]) -> Result<Container<'a>> {
    let tracks = boxes(moov)?.into_iter().filter(|b| &b.kind == b"trak").collect::<Vec<_>>();
    let is_auxiliary = |trak: &Bmff<'_>| -> Result<bool> {
        Ok(match find(&boxes(trak.body)?, b"tref") {
            Some(tref) => boxes(tref.body)?.iter().any(|r| &r.kind == b"auxl"),
            None => false,
        })
    };
    let mut has_alpha = false;
    for trak in &tracks {
        has_alpha |= is_auxiliary(trak)?;
    }
    for trak in &tracks {
        let children = boxes(trak.body)?;
        let auxiliary = is_auxiliary(trak)?;
        let path = [b"mdia", b"minf", b"stbl"];
        let mut level = children;
        for step in path {
            level = boxes(find(&level, step).ok_or_else(|| malformed("a track without a sample table"))?.body)?;
        }
        let stsd = find(&level, b"stsd").ok_or_else(|| malformed("a track without stsd"))?;
        let entries = boxes(stsd.body.get(8..).ok_or_else(|| malformed("short stsd"))?)?;
        let Some(entry) = entries.first().filter(|e| &e.kind == b"av01") else { continue };
        if auxiliary {
            continue;
        }
        let offset = match (find(&level, b"stco"), find(&level, b"co64")) {
            (Some(stco), _) => u64::from(Cursor(stco.body.get(8..).unwrap_or(&[])).u32()?),
            (None, Some(co64)) => Cursor(co64.body.get(8..).unwrap_or(&[])).u64()?,
            _ => return Err(malformed("a track without chunk offsets")),
        };
        let stsz = find(&level, b"stsz").ok_or_else(|| malformed("a track without stsz"))?;
        let mut c = Cursor(stsz.body);
        c.version_flags()?;
        let size = match c.u32()? {
            0 => {
                let _count = c.u32()?;
                c.u32()?
            }
            fixed => fixed,
        };
        let start = usize::try_from(offset).map_err(|_| malformed("sample offset"))?;
        let end = start.checked_add(size as usize).filter(|&e| e <= file.len());
        let payload = end
            .map(|e| &file[start..e])
            .ok_or_else(|| Error::Truncated { format: FORMAT, detail: "the first sample lies past the end".into() })?;
        // A visual sample entry: 78 bytes of fields, then its boxes (av1C, colr, ...).
        let entry_boxes = boxes(entry.body.get(78..).unwrap_or(&[]))?;
        let nclx = entry_boxes.iter().filter(|b| &b.kind == b"colr").find_map(|b| nclx(b.body));
        return Ok(Container { payload: Cow::Borrowed(payload), nclx, has_alpha, ..Container::default() });
    }
    Err(malformed("no colour track"))
}
