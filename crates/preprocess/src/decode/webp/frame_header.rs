//! The size an animation frame's `VP8 ` or `VP8L` chunk declares, accepted or refused as
//! libwebp 1.6's demuxer does for every frame when the file is opened: it runs
//! `WebPGetFeatures` on the chunk alone (`StoreFrame` in `src/demux/demux.c`), and a failure
//! refuses the whole file. That size, not the one in the `ANMF` header, is the frame's.

use crate::decode::bytes::{le16, le32};

/// A frame's width and height in pixels, as its bitstream header gives them (never zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FrameSize {
    pub width: u32,
    pub height: u32,
}

/// Reads the size from `chunk`: the whole chunk (its fourcc, its declared payload size, then
/// the padded payload). The checks are those of libwebp's `ParseHeadersInternal`,
/// `VP8GetInfo` and `VP8LGetInfo` on a chunk without a RIFF header:
/// - at least 12 bytes in all;
/// - `VP8 `: at least 10 payload bytes, the start code `9d 01 2a` at payload bytes 3..6, a key
///   frame (bit 0 of the frame tag clear), a profile of at most 3, the show-frame bit set, a
///   first-partition length (tag bits 5..) below the declared payload size, and a non-zero
///   14-bit width and height;
/// - `VP8L`: at least 5 payload bytes, the signature byte `0x2f` and a zero version (the top
///   3 bits of the 32-bit header); width and height are the 14-bit fields plus one.
///
/// The error says which check failed.
pub(super) fn frame_size(chunk: &[u8]) -> Result<FrameSize, String> {
    if chunk.len() < 12 {
        return Err(format!("a {}-byte image chunk (at least 12 are needed)", chunk.len()));
    }
    let payload = &chunk[8..];
    match &chunk[..4] {
        b"VP8 " => vp8_size(payload, le32(chunk, 4).unwrap_or(0)),
        b"VP8L" => vp8l_size(payload),
        other => Err(format!("{other:02x?} is not an image chunk")),
    }
}

fn vp8_size(payload: &[u8], declared: u32) -> Result<FrameSize, String> {
    if payload.len() < 10 {
        return Err(format!("VP8 frame header of {} bytes (10 are needed)", payload.len()));
    }
    if payload[3..6] != [0x9d, 0x01, 0x2a] {
        return Err(format!("VP8 start code {:02x?} (9d 01 2a expected)", &payload[3..6]));
    }
    let tag = u32::from(payload[0]) | u32::from(payload[1]) << 8 | u32::from(payload[2]) << 16;
    if tag & 1 != 0 {
        return Err("VP8 frame is not a key frame".into());
    }
    if (tag >> 1) & 7 > 3 {
        return Err(format!("VP8 profile {} (at most 3)", (tag >> 1) & 7));
    }
    if (tag >> 4) & 1 == 0 {
        return Err("VP8 frame is invisible (show_frame is 0)".into());
    }
    if tag >> 5 >= declared {
        return Err(format!("VP8 first partition of {} bytes in a {declared}-byte chunk", tag >> 5));
    }
    let width = u32::from(le16(payload, 6).unwrap_or(0) & 0x3fff);
    let height = u32::from(le16(payload, 8).unwrap_or(0) & 0x3fff);
    if width == 0 || height == 0 {
        return Err(format!("VP8 frame of {width}x{height}"));
    }
    Ok(FrameSize { width, height })
}

fn vp8l_size(payload: &[u8]) -> Result<FrameSize, String> {
    if payload.len() < 5 {
        return Err(format!("VP8L header of {} bytes (5 are needed)", payload.len()));
    }
    if payload[0] != 0x2f {
        return Err(format!("VP8L signature {:#04x} (0x2f expected)", payload[0]));
    }
    let bits = le32(payload, 1).unwrap_or(0);
    if bits >> 29 != 0 {
        return Err(format!("VP8L version {} (0 expected)", bits >> 29));
    }
    Ok(FrameSize { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(fourcc: &[u8; 4], declared: u32, payload: &[u8]) -> Vec<u8> {
        [fourcc.as_slice(), &declared.to_le_bytes(), payload].concat()
    }

    #[test]
    fn a_vp8_key_frame_gives_its_size_and_other_frames_are_refused() {
        // Key frame, profile 0, shown, first partition of 1 byte; 17x9.
        let header = [0x30, 0x00, 0x00, 0x9d, 0x01, 0x2a, 17, 0x40, 9, 0x80];
        assert_eq!(frame_size(&chunk(b"VP8 ", 10, &header)), Ok(FrameSize { width: 17, height: 9 }));
        let mut inter = header;
        inter[0] |= 1;
        assert!(frame_size(&chunk(b"VP8 ", 10, &inter)).unwrap_err().contains("key frame"));
        let mut hidden = header;
        hidden[0] &= !0x10;
        assert!(frame_size(&chunk(b"VP8 ", 10, &hidden)).unwrap_err().contains("invisible"));
        assert!(frame_size(&chunk(b"VP8 ", 1, &header)).unwrap_err().contains("partition"));
        assert!(frame_size(&chunk(b"VP8 ", 10, &header[..9])).is_err());
    }

    #[test]
    fn a_vp8l_header_gives_its_size_plus_one_and_a_version_is_refused() {
        let bits: u32 = 4 | 6 << 14 | 1 << 28;
        let payload = [&[0x2f][..], &bits.to_le_bytes()].concat();
        assert_eq!(frame_size(&chunk(b"VP8L", 5, &payload)), Ok(FrameSize { width: 5, height: 7 }));
        let versioned = [&[0x2f][..], &(bits | 1 << 29).to_le_bytes()].concat();
        assert!(frame_size(&chunk(b"VP8L", 5, &versioned)).unwrap_err().contains("version"));
        assert!(frame_size(&chunk(b"VP8L", 3, &payload[..3])).is_err());
    }
}
