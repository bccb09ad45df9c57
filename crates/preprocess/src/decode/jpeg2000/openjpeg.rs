//! OpenJPEG's tile-by-tile decoding API driven as Pillow's `Jpeg2KDecode.c` drives it: a 1 MiB
//! read stream with read and skip functions only (no seek function), the whole file's length
//! given, default decoder parameters (`cp_reduce` 0, `cp_layer` 0: every resolution and layer),
//! then `opj_read_header`, `opj_read_tile_header` / `opj_decode_tile_data` per tile and
//! `opj_end_decompress`.
//!
//! The stream's callbacks answer as Pillow's do over a Python file: a read returns the bytes
//! read or -1 at the end; a skip moves the position and returns the *new absolute position*
//! (not the count skipped; OpenJPEG's stream then believes it is further on than it is, and
//! this module keeps that belief identical). Where that belief would pass the stream's length,
//! OpenJPEG (built here with its assertions, Pillow's without) would assert, so the stream ends
//! instead and the decode is refused.
//!
//! OpenJPEG's messages go to this module's callbacks (never to stderr): the last error message
//! names a failure. OpenJPEG's only interface is C, so this module allows `unsafe`: every block
//! calls that API with handles this module created and owns until [`Decoder`] drops, or reads
//! the image header OpenJPEG returned while it is alive. A [`Decoder`] is not `Send`; each
//! decode owns its own.
#![allow(unsafe_code)]

use super::FORMAT;
use super::header::Codec;
use crate::{Error, Result};
use openjpeg_sys as opj;
use std::ffi::{CStr, c_char, c_void};
use std::ptr::{self, NonNull};

/// Pillow's `BUFFER_SIZE` (`OPJ_J2K_STREAM_CHUNK_SIZE`).
const BUFFER_SIZE: usize = 0x10_0000;

/// One component of the image header.
#[derive(Debug, Clone, Copy)]
pub(super) struct Component {
    /// Bits per sample, 1..=31 (OpenJPEG refuses more).
    pub prec: u32,
    pub sgnd: bool,
    /// Subsampling factors, each at least 1.
    pub dx: u32,
    pub dy: u32,
}

/// `opj_image_t`'s header, as `opj_read_header` leaves it.
#[derive(Debug, Clone, Default)]
pub(super) struct ImageInfo {
    /// The image area on the reference grid: `x0..x1`, `y0..y1`.
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
    /// `OPJ_COLOR_SPACE` as its integer value (-1 unknown, 0 unspecified, 1 sRGB, 2 gray,
    /// 3 sYCC, 4 e-YCC, 5 CMYK).
    pub color_space: i32,
    pub comps: Vec<Component>,
}

/// What `opj_read_tile_header` says of the next tile.
#[derive(Debug, Clone, Copy)]
pub(super) struct TileHeader {
    pub index: u32,
    /// The bytes `opj_decode_tile_data` writes.
    pub data_size: u32,
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
    pub nb_comps: u32,
}

/// The Python file Pillow's stream callbacks read, and OpenJPEG's idea of where it is.
struct Source<'a> {
    bytes: &'a [u8],
    /// The file position (may pass the end, as a Python seek may).
    pos: u64,
    /// How far OpenJPEG's stream offset runs ahead of `pos` (every skip adds the position it
    /// started from, since the skip function returns the new position as the count).
    drift: u64,
    /// Set where OpenJPEG's offset would have passed the stream's length.
    overrun: bool,
}

/// Messages OpenJPEG reported.
#[derive(Default)]
struct Messages {
    last_error: Option<String>,
}

/// An OpenJPEG decode in progress over `bytes`.
pub(super) struct Decoder<'a> {
    codec: NonNull<opj::opj_codec_t>,
    stream: NonNull<opj::opj_stream_t>,
    /// The header image, once `opj_read_header` gave one.
    image: Option<NonNull<opj::opj_image_t>>,
    /// `Box::into_raw` of the callbacks' states, freed in `Drop` after the handles.
    source: NonNull<Source<'a>>,
    messages: NonNull<Messages>,
    pub info: ImageInfo,
}

impl std::fmt::Debug for Decoder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder").field("info", &self.info).finish_non_exhaustive()
    }
}

/// Pillow's `j2k_read`: up to `n` bytes at the position, -1 when none are left.
unsafe extern "C" fn read(buffer: *mut c_void, n: usize, user: *mut c_void) -> usize {
    // SAFETY: `user` is the `Source` boxed by `Decoder::open`, alive and not otherwise borrowed
    // while OpenJPEG runs (the decoder's methods hold `&mut self`); `buffer` has room for `n`
    // bytes (OpenJPEG's stream buffer or the caller's).
    let source = unsafe { &mut *user.cast::<Source>() };
    let len = source.bytes.len() as u64;
    let start = source.pos.min(len);
    let count = (n as u64).min(len - start);
    // OpenJPEG's offset after this read would be `pos + count + drift`; past the length its
    // byte count assertions fire.
    if count == 0 || (source.drift > 0 && source.pos.saturating_add(count + source.drift) > len) {
        source.overrun |= count > 0;
        return usize::MAX;
    }
    let from = &source.bytes[start as usize..(start + count) as usize];
    // SAFETY: `from` is `count <= n` bytes inside `bytes`; `buffer` holds `n` bytes and is
    // OpenJPEG's memory, not `bytes`.
    unsafe { ptr::copy_nonoverlapping(from.as_ptr(), buffer.cast::<u8>(), from.len()) };
    source.pos += count;
    count as usize
}

/// Pillow's `j2k_skip`: moves the position by `n` and returns the new position (-1 at 0).
unsafe extern "C" fn skip(n: i64, user: *mut c_void) -> i64 {
    // SAFETY: as in `read`.
    let source = unsafe { &mut *user.cast::<Source>() };
    let len = source.bytes.len() as u64;
    let Some(new) = source.pos.checked_add_signed(n) else {
        source.overrun = true;
        return -1;
    };
    let drift = source.drift + source.pos;
    if new.saturating_add(drift) > len {
        source.overrun = true;
        return -1;
    }
    source.drift = drift;
    source.pos = new;
    if new == 0 { -1 } else { new as i64 }
}

/// Pillow's `j2k_error` (keeps the last message); also the warning and info handler, which
/// keep nothing.
unsafe extern "C" fn on_error(message: *const c_char, user: *mut c_void) {
    // SAFETY: `user` is the boxed `Messages` of the decoder whose codec reports; `message` is a
    // NUL-terminated string OpenJPEG owns for the duration of the call.
    let (messages, text) = unsafe { (&mut *user.cast::<Messages>(), CStr::from_ptr(message)) };
    messages.last_error = Some(text.to_string_lossy().trim_end().to_owned());
}

unsafe extern "C" fn on_other(_message: *const c_char, _user: *mut c_void) {}

impl<'a> Decoder<'a> {
    /// Creates the stream and codec over `bytes` and reads the main header.
    pub fn open(bytes: &'a [u8], codec: Codec) -> Result<Self> {
        // SAFETY: plain constructor; a null result is checked.
        let stream =
            NonNull::new(unsafe { opj::opj_stream_create(BUFFER_SIZE, 1) }).ok_or_else(|| broken("no stream"))?;
        let format = match codec {
            Codec::J2k => opj::CODEC_FORMAT::OPJ_CODEC_J2K,
            Codec::Jp2 => opj::CODEC_FORMAT::OPJ_CODEC_JP2,
        };
        // SAFETY: as above.
        let Some(codec) = NonNull::new(unsafe { opj::opj_create_decompress(format) }) else {
            // SAFETY: `stream` was created above and is not used again.
            unsafe { opj::opj_stream_destroy(stream.as_ptr()) };
            return Err(broken("no codec"));
        };
        let source = NonNull::from(Box::leak(Box::new(Source { bytes, pos: 0, drift: 0, overrun: false })));
        let messages = NonNull::from(Box::leak(Box::<Messages>::default()));
        // From here on the decoder owns every handle and state, and `Drop` frees them.
        let mut decoder = Decoder { codec, stream, image: None, source, messages, info: ImageInfo::default() };
        let (source_ptr, messages_ptr) = (source.as_ptr(), messages.as_ptr());
        // SAFETY: `stream` and `codec` are live handles; the user data pointers are the leaked
        // states, which live until the decoder drops, after both handles are destroyed. The
        // parameters are initialised by `opj_set_default_decoder_parameters` before use.
        let header_read = unsafe {
            opj::opj_stream_set_read_function(stream.as_ptr(), Some(read));
            opj::opj_stream_set_skip_function(stream.as_ptr(), Some(skip));
            opj::opj_stream_set_user_data(stream.as_ptr(), source_ptr.cast(), None);
            opj::opj_stream_set_user_data_length(stream.as_ptr(), bytes.len() as u64);
            opj::opj_set_error_handler(codec.as_ptr(), Some(on_error), messages_ptr.cast());
            opj::opj_set_warning_handler(codec.as_ptr(), Some(on_other), ptr::null_mut());
            opj::opj_set_info_handler(codec.as_ptr(), Some(on_other), ptr::null_mut());
            let mut params = std::mem::MaybeUninit::<opj::opj_dparameters_t>::zeroed();
            opj::opj_set_default_decoder_parameters(params.as_mut_ptr());
            let mut params = params.assume_init();
            params.cp_reduce = 0;
            params.cp_layer = 0;
            let mut image: *mut opj::opj_image_t = ptr::null_mut();
            // Pillow ignores `opj_setup_decoder`'s answer (with default parameters it succeeds).
            opj::opj_setup_decoder(codec.as_ptr(), &mut params);
            let ok = opj::opj_read_header(stream.as_ptr(), codec.as_ptr(), &mut image) != 0;
            (ok, image)
        };
        let image = match header_read {
            (true, image) => NonNull::new(image),
            (false, image) => {
                decoder.image = NonNull::new(image);
                return Err(decoder.failure("opj_read_header"));
            }
        };
        let Some(image) = image else {
            return Err(broken("opj_read_header gave no image"));
        };
        decoder.image = Some(image);
        // SAFETY: `image` is OpenJPEG's header image, alive until the decoder drops; its
        // `comps` array holds `numcomps` entries. The colour space is read as the C enum's `int`.
        let info = unsafe {
            let im = image.as_ptr();
            let comps = if (*im).comps.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts((*im).comps, (*im).numcomps as usize)
            };
            ImageInfo {
                x0: (*im).x0,
                y0: (*im).y0,
                x1: (*im).x1,
                y1: (*im).y1,
                color_space: ptr::addr_of!((*im).color_space).cast::<i32>().read(),
                comps: comps
                    .iter()
                    .map(|c| Component { prec: c.prec, sgnd: c.sgnd != 0, dx: c.dx.max(1), dy: c.dy.max(1) })
                    .collect(),
            }
        };
        decoder.info = info;
        Ok(decoder)
    }

    /// `opj_read_tile_header`: the next tile, `None` after the last.
    pub fn next_tile(&mut self) -> Result<Option<TileHeader>> {
        let mut t = TileHeader { index: 0, data_size: 0, x0: 0, y0: 0, x1: 0, y1: 0, nb_comps: 0 };
        let mut more = 0;
        // SAFETY: live handles owned by `self`; every out-pointer is a local.
        let ok = unsafe {
            opj::opj_read_tile_header(
                self.codec.as_ptr(),
                self.stream.as_ptr(),
                &mut t.index,
                &mut t.data_size,
                &mut t.x0,
                &mut t.y0,
                &mut t.x1,
                &mut t.y1,
                &mut t.nb_comps,
                &mut more,
            )
        };
        self.check(ok, "opj_read_tile_header")?;
        Ok((more != 0).then_some(t))
    }

    /// `opj_decode_tile_data` of `tile` into `buffer` (at least its `data_size` bytes).
    pub fn decode_tile(&mut self, tile: &TileHeader, buffer: &mut [u8]) -> Result<()> {
        let size = u32::try_from(buffer.len()).map_err(|_| broken("tile buffer over 4 GiB"))?;
        // SAFETY: live handles; `buffer` is `size` writable bytes, which OpenJPEG checks
        // against the tile's decoded size before writing.
        let ok = unsafe {
            opj::opj_decode_tile_data(self.codec.as_ptr(), tile.index, buffer.as_mut_ptr(), size, self.stream.as_ptr())
        };
        self.check(ok, "opj_decode_tile_data")
    }

    /// `opj_end_decompress`.
    pub fn finish(mut self) -> Result<()> {
        // SAFETY: live handles owned by `self`.
        let ok = unsafe { opj::opj_end_decompress(self.codec.as_ptr(), self.stream.as_ptr()) };
        self.check(ok, "opj_end_decompress")
    }

    fn check(&mut self, ok: i32, call: &str) -> Result<()> {
        if ok == 0 || self.overrun() { Err(self.failure(call)) } else { Ok(()) }
    }

    /// Whether the stream ended early to keep OpenJPEG's offset within the length.
    fn overrun(&self) -> bool {
        // SAFETY: `source` is live until drop; no OpenJPEG call (hence no callback) is running.
        unsafe { self.source.as_ref().overrun }
    }

    /// The error of a failed call: the overrun, else OpenJPEG's last error message.
    fn failure(&self, call: &str) -> Error {
        if self.overrun() {
            return overrun();
        }
        // SAFETY: as in `overrun`.
        match unsafe { &self.messages.as_ref().last_error } {
            Some(message) => broken(&format!("{call}: {message}")),
            None => broken(&format!("{call} failed")),
        }
    }
}

impl Drop for Decoder<'_> {
    fn drop(&mut self) {
        // SAFETY: the handles were created by `open`, are destroyed only here, and nothing
        // uses them afterwards. The states were leaked by `open` and are freed once, after the handles that
        // point to them.
        unsafe {
            opj::opj_destroy_codec(self.codec.as_ptr());
            if let Some(image) = self.image {
                opj::opj_image_destroy(image.as_ptr());
            }
            opj::opj_stream_destroy(self.stream.as_ptr());
            drop(Box::from_raw(self.source.as_ptr()));
            drop(Box::from_raw(self.messages.as_ptr()));
        }
    }
}

fn broken(detail: &str) -> Error {
    Error::malformed(FORMAT, format!("broken data stream when reading image file ({detail})"))
}

fn overrun() -> Error {
    Error::unsupported(
        FORMAT,
        "a skip inside the stream leaves Pillow's OpenJPEG stream offset past the file's length \
         (Pillow's skip callback returns the position, not the count)",
    )
}
