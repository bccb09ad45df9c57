//! An animated WebP's container (`VP8X` with the animation flag, `ANIM`, `ANMF` frames),
//! accepted or refused as libwebp 1.6's demuxer does when Pillow's `WebPAnimDecoder` opens the
//! whole file (`WebPDemux`, `src/demux/demux.c`: `ReadHeader`, `ParseVP8X`,
//! `ParseVP8XChunks`, `ParseAnimationFrame`, `StoreFrame`, `IsValidExtendedFormat`). Every
//! frame is checked, not only the first: a bad later frame makes Pillow refuse the file.
//!
//! The walk is flat, as libwebp's is: an `ANMF` chunk's 16-byte header is read, then its image
//! chunks (`ALPH`, then `VP8 ` or `VP8L`) one by one until a chunk of another kind, and the
//! walk goes on from there at the top level; the chunk sizes are the only framing.

use super::frame_header::{FrameSize, frame_size};
use crate::decode::bytes::le32;
use crate::{Error, Limits, Result};

const FORMAT: &str = "WEBP";
/// libwebp's `MAX_CHUNK_PAYLOAD`: the largest chunk payload size it accepts.
const MAX_CHUNK_PAYLOAD: u32 = u32::MAX - 8 - 1;
/// libwebp's `MAX_IMAGE_AREA`: a canvas or frame of this many pixels or more is refused.
const MAX_IMAGE_AREA: u64 = 1 << 32;
/// The VP8X flags libwebp knows (`ALL_VALID_FLAGS`); any other bit refuses the file.
const VALID_FLAGS: u8 = 0x3e;
const ANIMATION_FLAG: u8 = 0x02;
const XMP_FLAG: u8 = 0x04;
const EXIF_FLAG: u8 = 0x08;

/// An animation as far as its first frame needs it.
#[derive(Debug)]
pub(super) struct Animation<'a> {
    pub canvas_width: u32,
    pub canvas_height: u32,
    pub first_frame: Frame<'a>,
    /// The first `EXIF` chunk's payload, kept only when the VP8X EXIF flag is set (libwebp's
    /// `WebPDemuxGetChunk`, which Pillow reads `info["exif"]` from).
    pub exif: Option<&'a [u8]>,
    /// The first `XMP ` chunk's payload, kept only when the VP8X XMP flag is set.
    pub xmp: Option<&'a [u8]>,
}

/// One frame: where it sits on the canvas and its image chunks.
#[derive(Debug, Clone, Copy)]
pub(super) struct Frame<'a> {
    /// Offsets on the canvas (twice the `ANMF` fields).
    pub x: u32,
    pub y: u32,
    /// The bitstream's size; `x + width` and `y + height` are within the canvas.
    pub size: FrameSize,
    /// The whole `ALPH` chunk (header and padded payload), directly before `image`.
    pub alpha: Option<&'a [u8]>,
    /// The whole `VP8 ` or `VP8L` chunk (header and padded payload).
    pub image: &'a [u8],
}

/// Whether `bytes` is a WebP whose first chunk is `VP8X` with the animation flag: the files
/// this module reads; any other WebP is a still image.
pub(super) fn is_animation(bytes: &[u8]) -> bool {
    bytes.get(12..16) == Some(b"VP8X") && bytes.get(20).is_some_and(|flags| flags & ANIMATION_FLAG != 0)
}

/// Parses an animated WebP ([`is_animation`]); the canvas is checked against `limits` as soon
/// as its size is read. Refuses, naming what was wrong, every file libwebp's demuxer refuses:
/// - a file shorter than its RIFF size says ([`Error::Truncated`]); bytes past it are ignored;
/// - a RIFF size under 8 or over `MAX_CHUNK_PAYLOAD`, a `VP8X` payload under 10 bytes, a
///   canvas of 2^32 pixels or more, VP8X flag bits outside `0x3e`;
/// - any chunk whose padded payload runs past the RIFF end, or fewer than 8 bytes left over
///   after a chunk;
/// - a second `VP8X`; an `ALPH`, `VP8 ` or `VP8L` chunk outside an `ANMF`; an `ANIM` payload
///   under 6 bytes; an `ANMF` before any `ANIM`, or under 16 bytes, or whose `ANMF` header
///   declares 2^32 pixels or more;
/// - in a frame: a `VP8L` after an `ALPH`, an `ALPH` after the image chunk, an `ALPH`
///   without an image chunk, image chunks running past the `ANMF` chunk, a bitstream header
///   [`frame_size`] refuses, a frame reaching past the canvas;
/// - no frame at all.
///
/// An `ANMF` holding no image chunk at all is no frame (the next one with image data is frame
/// 1); a second `ANIM` and chunks of other kinds are skipped.
pub(super) fn parse<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Animation<'a>> {
    let malformed = |detail: String| Error::malformed(FORMAT, detail);
    let riff_size = le32(bytes, 4).ok_or_else(|| truncated(bytes.len()))?;
    if !(8..=MAX_CHUNK_PAYLOAD).contains(&riff_size) {
        return Err(malformed(format!("RIFF size {riff_size}")));
    }
    let riff_end = riff_size as usize + 8;
    if bytes.len() < riff_end {
        return Err(Error::Truncated {
            format: FORMAT,
            detail: format!("RIFF size {riff_size} needs {riff_end} bytes, the file has {}", bytes.len()),
        });
    }
    let mut walk = Walk { data: &bytes[..riff_end], at: 12 };
    let vp8x = walk.chunk()?;
    if vp8x.size < 10 {
        return Err(malformed(format!("VP8X chunk of {} bytes (10 are needed)", vp8x.size)));
    }
    let flags = vp8x.payload[0];
    let canvas_width = le24(vp8x.payload, 4) + 1;
    let canvas_height = le24(vp8x.payload, 7) + 1;
    if u64::from(canvas_width) * u64::from(canvas_height) >= MAX_IMAGE_AREA {
        return Err(malformed(format!("canvas of {canvas_width}x{canvas_height}")));
    }
    limits.check(canvas_width.into(), canvas_height.into())?;
    if walk.left() < 8 {
        return Err(malformed("no chunk after VP8X".into()));
    }

    let mut frames = Frames::new(canvas_width, canvas_height);
    let (mut seen_anim, mut exif, mut xmp) = (false, None, None);
    loop {
        let start = walk.at;
        let chunk = walk.chunk()?;
        match &chunk.fourcc {
            b"VP8X" => return Err(malformed(format!("a second VP8X chunk at byte {start}"))),
            b"ALPH" | b"VP8 " | b"VP8L" => {
                return Err(malformed(format!("{} chunk outside ANMF in an animation", fourcc(&chunk.fourcc))));
            }
            b"ANIM" if chunk.payload.len() < 6 => {
                return Err(malformed(format!("ANIM chunk of {} bytes (6 are needed)", chunk.size)));
            }
            b"ANIM" => seen_anim = true,
            b"ANMF" if !seen_anim => return Err(malformed(format!("ANMF chunk at byte {start} before ANIM"))),
            b"ANMF" => {
                walk.at = chunk.payload_start;
                frames.parse(&mut walk, chunk.payload.len())?;
            }
            b"EXIF" if flags & EXIF_FLAG != 0 && exif.is_none() => exif = Some(chunk.unpadded()),
            b"XMP " if flags & XMP_FLAG != 0 && xmp.is_none() => xmp = Some(chunk.unpadded()),
            _ => {}
        }
        if walk.left() == 0 {
            break;
        }
        if walk.left() < 8 {
            return Err(malformed(format!("{} stray bytes at the end of the RIFF chunk", walk.left())));
        }
    }
    if flags & !VALID_FLAGS != 0 {
        return Err(malformed(format!("VP8X flags {flags:#04x} (only 0x3e are defined)")));
    }
    let first_frame = frames.first.ok_or_else(|| malformed("an animation without frames".into()))?;
    Ok(Animation { canvas_width, canvas_height, first_frame, exif, xmp })
}

fn truncated(len: usize) -> Error {
    Error::Truncated { format: FORMAT, detail: format!("{len} bytes: no RIFF header") }
}

fn le24(b: &[u8], at: usize) -> u32 {
    u32::from(b[at]) | u32::from(b[at + 1]) << 8 | u32::from(b[at + 2]) << 16
}

fn fourcc(f: &[u8; 4]) -> String {
    String::from_utf8_lossy(f).into_owned()
}

/// A position in the RIFF payload (`data` ends where the RIFF chunk does).
struct Walk<'a> {
    data: &'a [u8],
    at: usize,
}

/// One chunk as [`Walk::chunk`] read it.
struct Chunk<'a> {
    fourcc: [u8; 4],
    /// The declared payload size.
    size: u32,
    /// Where the payload starts in the file.
    payload_start: usize,
    /// The padded payload.
    payload: &'a [u8],
    /// The whole chunk: header and padded payload.
    whole: &'a [u8],
}

impl<'a> Chunk<'a> {
    fn unpadded(&self) -> &'a [u8] {
        &self.payload[..self.size as usize]
    }
}

impl<'a> Walk<'a> {
    fn left(&self) -> usize {
        self.data.len() - self.at
    }

    /// Reads the chunk at the position and moves past its padded payload; refuses a header
    /// that is not all there, a size over `MAX_CHUNK_PAYLOAD`, or a payload past the end.
    fn chunk(&mut self) -> Result<Chunk<'a>> {
        let start = self.at;
        let (Some(fourcc), Some(size)) = (self.data.get(start..start + 4), le32(self.data, start + 4)) else {
            return Err(Error::malformed(FORMAT, format!("chunk header at byte {start} runs past the RIFF end")));
        };
        let fourcc: [u8; 4] = fourcc.try_into().unwrap_or_default();
        if size > MAX_CHUNK_PAYLOAD {
            return Err(Error::malformed(FORMAT, format!("{} chunk of {size} bytes", self::fourcc(&fourcc))));
        }
        let padded = size as usize + (size & 1) as usize;
        let payload_start = start + 8;
        let Some(payload) = self.data.get(payload_start..payload_start + padded) else {
            return Err(Error::malformed(
                FORMAT,
                format!("{} chunk at byte {start} ({size} bytes) runs past the RIFF end", self::fourcc(&fourcc)),
            ));
        };
        self.at = payload_start + padded;
        Ok(Chunk { fourcc, size, payload_start, payload, whole: &self.data[start..self.at] })
    }
}

/// The frames read so far: only the first is kept, the others are checked.
struct Frames<'a> {
    canvas_width: u32,
    canvas_height: u32,
    count: u32,
    first: Option<Frame<'a>>,
}

impl<'a> Frames<'a> {
    fn new(canvas_width: u32, canvas_height: u32) -> Self {
        Frames { canvas_width, canvas_height, count: 0, first: None }
    }

    /// Reads one `ANMF` chunk's header and image chunks; `walk` is at its payload, of `payload`
    /// padded bytes, and is left after the last image chunk read.
    fn parse(&mut self, walk: &mut Walk<'a>, payload: usize) -> Result<()> {
        let malformed = |detail: String| Error::malformed(FORMAT, detail);
        let number = self.count + 1;
        if payload < 16 {
            return Err(malformed(format!("ANMF chunk of {payload} bytes (16 are needed)")));
        }
        let header = &walk.data[walk.at..walk.at + 16];
        let (x, y) = (2 * le24(header, 0), 2 * le24(header, 3));
        let (declared_width, declared_height) = (le24(header, 6) + 1, le24(header, 9) + 1);
        if u64::from(declared_width) * u64::from(declared_height) >= MAX_IMAGE_AREA {
            return Err(malformed(format!("ANMF frame of {declared_width}x{declared_height}")));
        }
        walk.at += 16;
        let images_start = walk.at;
        if walk.left() < 8 {
            return Err(malformed(format!("frame {number}: no chunk after its ANMF header")));
        }
        let mut alpha: Option<&[u8]> = None;
        let mut image: Option<(&[u8], FrameSize)> = None;
        loop {
            let start = walk.at;
            let chunk = walk.chunk()?;
            match &chunk.fourcc {
                b"ALPH" if alpha.is_none() => {
                    if image.is_some() {
                        return Err(malformed(format!("frame {number}: ALPH chunk after its image chunk")));
                    }
                    alpha = Some(chunk.whole);
                }
                b"VP8L" if alpha.is_some() => {
                    return Err(malformed(format!("frame {number}: VP8L chunk after an ALPH chunk")));
                }
                b"VP8 " | b"VP8L" if image.is_none() => {
                    let size = frame_size(chunk.whole).map_err(|e| malformed(format!("frame {number}: {e}")))?;
                    image = Some((chunk.whole, size));
                }
                _ => {
                    walk.at = start;
                    break;
                }
            }
            if walk.left() == 0 {
                break;
            }
            if walk.left() < 8 {
                return Err(malformed(format!("frame {number}: {} stray bytes after its chunks", walk.left())));
            }
        }
        if walk.at - images_start > payload - 16 {
            return Err(malformed(format!("frame {number}: image chunks run past its ANMF chunk")));
        }
        let Some((image, size)) = image else {
            return match alpha {
                Some(_) => Err(malformed(format!("frame {number}: an ALPH chunk without an image chunk"))),
                None => Ok(()),
            };
        };
        if u64::from(x) + u64::from(size.width) > u64::from(self.canvas_width)
            || u64::from(y) + u64::from(size.height) > u64::from(self.canvas_height)
        {
            return Err(malformed(format!(
                "frame {number}: {}x{} at ({x}, {y}) reaches past the {}x{} canvas",
                size.width, size.height, self.canvas_width, self.canvas_height
            )));
        }
        self.count = number;
        self.first.get_or_insert(Frame { x, y, size, alpha, image });
        Ok(())
    }
}
