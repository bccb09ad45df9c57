//! One AV1 still frame decoded by `re_rav1d` (the Rust port of dav1d, the decoder Pillow's
//! libavif uses): the OBUs of one item in, the frame's planes and its sequence header's colour
//! description out. AV1 decoding is normative, so these are dav1d's samples, film grain applied
//! as dav1d applies it by default.
//!
//! `re_rav1d`'s only public interface is dav1d's C API, so this module allows `unsafe`: every
//! block calls that API with pointers to locals this module owns, and reads the picture's planes
//! within the extents the decoder reports.
#![allow(unsafe_code)]

use crate::{Error, Result};
use re_rav1d::include::dav1d::data::Dav1dData;
use re_rav1d::include::dav1d::dav1d::{Dav1dContext, Dav1dSettings};
use re_rav1d::include::dav1d::headers::{
    DAV1D_PIXEL_LAYOUT_I400, DAV1D_PIXEL_LAYOUT_I420, DAV1D_PIXEL_LAYOUT_I422, DAV1D_PIXEL_LAYOUT_I444,
};
use re_rav1d::include::dav1d::picture::Dav1dPicture;
use re_rav1d::src::lib::{
    dav1d_close, dav1d_data_create, dav1d_data_unref, dav1d_default_settings, dav1d_get_picture, dav1d_open,
    dav1d_picture_unref, dav1d_send_data,
};
use std::mem::MaybeUninit;
use std::ptr::NonNull;

const FORMAT: &str = "AVIF";

/// Chroma subsampling of a frame (dav1d's pixel layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// 4:0:0: luma only.
    Monochrome,
    Yuv420,
    Yuv422,
    Yuv444,
}

/// One plane: `width * height` samples, row-major (8-bit samples widened to `u16`).
#[derive(Debug)]
pub(super) struct Plane {
    pub width: usize,
    pub height: usize,
    pub samples: Vec<u16>,
}

/// A decoded frame: its planes (Y, then U and V unless monochrome) and the colour description
/// of its sequence header (ITU-T H.273 code points).
#[derive(Debug)]
pub(super) struct Frame {
    pub width: u32,
    pub height: u32,
    pub depth: u32,
    pub layout: Layout,
    pub planes: Vec<Plane>,
    pub full_range: bool,
    pub color_primaries: u16,
    pub matrix_coefficients: u16,
}

/// Decodes the first frame of `obus` (an item's payload), refusing frames over `max_pixels`
/// inside the decoder (dav1d's `frame_size_limit`).
pub(super) fn decode(obus: &[u8], max_pixels: u64) -> Result<Frame> {
    if obus.is_empty() {
        return Err(Error::malformed(FORMAT, "empty AV1 payload"));
    }
    let context = Context::open(max_pixels)?;
    let mut data = Dav1dData::default();
    // SAFETY: `data` is a local `Dav1dData`; on success `dav1d_data_create` points it at a fresh
    // buffer of `obus.len()` bytes, which we fill before handing `data` to the decoder.
    let buffer = unsafe { dav1d_data_create(Some(NonNull::from(&mut data)), obus.len()) };
    if buffer.is_null() {
        return Err(Error::malformed(FORMAT, "cannot allocate the AV1 payload"));
    }
    // SAFETY: `buffer` holds `obus.len()` writable bytes that nothing else references.
    unsafe { std::ptr::copy_nonoverlapping(obus.as_ptr(), buffer, obus.len()) };
    let picture = context.first_picture(&mut data);
    if data.data.is_some() {
        // SAFETY: `data` came from `dav1d_data_create` and still holds its reference.
        unsafe { dav1d_data_unref(Some(NonNull::from(&mut data))) };
    }
    frame(&picture?)
}

/// dav1d's context, closed on drop.
struct Context(Option<Dav1dContext>);

impl Context {
    fn open(max_pixels: u64) -> Result<Context> {
        let mut settings = MaybeUninit::<Dav1dSettings>::uninit();
        // SAFETY: `dav1d_default_settings` writes every field of the settings it is given.
        let mut settings = unsafe {
            dav1d_default_settings(NonNull::from(&mut settings).cast());
            settings.assume_init()
        };
        settings.n_threads = 1;
        settings.max_frame_delay = 1;
        // libavif's: the highest spatial layer of operating point 0, not every layer.
        settings.all_layers = 0;
        settings.frame_size_limit = u32::try_from(max_pixels).unwrap_or(u32::MAX);
        let mut context = Context(None);
        // SAFETY: both pointers are to live locals; on success the context is written to `context.0`.
        let result = unsafe { dav1d_open(Some(NonNull::from(&mut context.0)), Some(NonNull::from(&mut settings))) };
        if result.0 != 0 || context.0.is_none() {
            return Err(Error::malformed(FORMAT, format!("cannot open the AV1 decoder (error {})", result.0)));
        }
        Ok(context)
    }

    /// Sends `data` and returns the first picture, as libavif's dav1d codec does for one sample.
    fn first_picture(&self, data: &mut Dav1dData) -> Result<Picture> {
        let mut picture = Picture(Dav1dPicture::default());
        loop {
            let pending = data.sz;
            if data.sz > 0 {
                // SAFETY: the context is open; `data` is a live `Dav1dData` from `dav1d_data_create`.
                let sent = unsafe { dav1d_send_data(self.0, Some(NonNull::from(&mut *data))) };
                if sent.0 < 0 && !would_block(sent.0) {
                    return Err(av1_error(sent.0));
                }
            }
            // SAFETY: the context is open; `picture.0` is a live, empty picture it may overwrite.
            let got = unsafe { dav1d_get_picture(self.0, Some(NonNull::from(&mut picture.0))) };
            if got.0 == 0 {
                return Ok(picture);
            }
            if !would_block(got.0) || data.sz == 0 {
                return Err(av1_error(got.0));
            }
            if data.sz == pending {
                return Err(Error::malformed(FORMAT, "the AV1 decoder takes no more data and returns no picture"));
            }
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: `self.0` is `None` or a context from `dav1d_open` not yet closed.
        unsafe { dav1d_close(Some(NonNull::from(&mut self.0))) };
    }
}

/// A picture returned by dav1d, released on drop.
struct Picture(Dav1dPicture);

impl Drop for Picture {
    fn drop(&mut self) {
        // SAFETY: the picture is empty or was filled by `dav1d_get_picture`.
        unsafe { dav1d_picture_unref(Some(NonNull::from(&mut self.0))) };
        // rav1d 0.1.3's `dav1d_picture_unref` leaves the picture it clears holding a freshly
        // allocated, empty ITU-T T.35 list (its `Default`). Release it, or every decode leaks it.
        if let Some(empty) = self.0.itut_t35_ref.take() {
            // SAFETY: rav1d made `empty` with `RawArc::from_arc` and nothing else refers to it:
            // the picture was just cleared, and `take` leaves no copy behind.
            drop(unsafe { empty.into_arc() });
        }
    }
}

fn would_block(code: i32) -> bool {
    std::io::Error::from_raw_os_error(-code).kind() == std::io::ErrorKind::WouldBlock
}

fn av1_error(code: i32) -> Error {
    Error::malformed(FORMAT, format!("the AV1 payload does not decode ({})", std::io::Error::from_raw_os_error(-code)))
}

/// Copies the picture's planes out of dav1d's buffers.
fn frame(picture: &Picture) -> Result<Frame> {
    let p = &picture.0;
    let bad = |what: &str| Error::malformed(FORMAT, format!("the AV1 decoder returned {what}"));
    let width = usize::try_from(p.p.w).map_err(|_| bad("a negative width"))?;
    let height = usize::try_from(p.p.h).map_err(|_| bad("a negative height"))?;
    let depth = u32::try_from(p.p.bpc).map_err(|_| bad("a negative bit depth"))?;
    let (layout, plane_count, (sx, sy)) = match p.p.layout {
        DAV1D_PIXEL_LAYOUT_I400 => (Layout::Monochrome, 1, (0, 0)),
        DAV1D_PIXEL_LAYOUT_I420 => (Layout::Yuv420, 3, (1, 1)),
        DAV1D_PIXEL_LAYOUT_I422 => (Layout::Yuv422, 3, (1, 0)),
        DAV1D_PIXEL_LAYOUT_I444 => (Layout::Yuv444, 3, (0, 0)),
        _ => return Err(bad("an unknown pixel layout")),
    };
    let header = p.seq_hdr.ok_or_else(|| bad("no sequence header"))?;
    // SAFETY: a picture from `dav1d_get_picture` points at its sequence header for its lifetime.
    let header = unsafe { header.as_ref() };
    let bytes_per_sample = if depth > 8 { 2 } else { 1 };
    let mut planes = Vec::with_capacity(plane_count);
    for index in 0..plane_count {
        let (plane_width, plane_height) =
            if index == 0 { (width, height) } else { ((width + sx) >> sx, (height + sy) >> sy) };
        let stride = p.stride[usize::from(index > 0)];
        let base = p.data[index].ok_or_else(|| bad("a missing plane"))?;
        let stride = usize::try_from(stride).map_err(|_| bad("a negative stride"))?;
        if stride < plane_width * bytes_per_sample {
            return Err(bad("a stride shorter than a row"));
        }
        let mut samples = Vec::with_capacity(plane_width * plane_height);
        for y in 0..plane_height {
            // SAFETY: dav1d's plane `index` holds `plane_height` rows of `stride` bytes, each
            // starting with `plane_width` samples of `bytes_per_sample` bytes.
            let row = unsafe {
                std::slice::from_raw_parts(base.as_ptr().cast::<u8>().add(y * stride), plane_width * bytes_per_sample)
            };
            if bytes_per_sample == 1 {
                samples.extend(row.iter().map(|&s| u16::from(s)));
            } else {
                samples.extend(row.chunks_exact(2).map(|s| u16::from_ne_bytes([s[0], s[1]])));
            }
        }
        planes.push(Plane { width: plane_width, height: plane_height, samples });
    }
    Ok(Frame {
        width: u32::try_from(width).map_err(|_| bad("a width over 32 bits"))?,
        height: u32::try_from(height).map_err(|_| bad("a height over 32 bits"))?,
        depth,
        layout,
        planes,
        full_range: header.color_range != 0,
        color_primaries: u16::try_from(header.pri).unwrap_or(u16::MAX),
        matrix_coefficients: u16::try_from(header.mtrx).unwrap_or(u16::MAX),
    })
}
