//! The process-wide MLX error handler and the one place where C statuses become `Result`s.
//!
//! [`init`] opens MLX (`mlx_ffi::library`) and, once per process (a `std::sync::Once`), before
//! any other MLX call, replaces
//! mlx-c's default error handler (print, then `exit(-1)`) with one that stores the message in
//! a thread-local slot, read back by the same thread's failing call ([`check`], and
//! [`Array`](crate::Array)'s constructors). Every entry point of this crate calls it first, so
//! no MLX constructor can run before it. Uses nothing but the FFI and [`Error`]; [`api`] is the
//! table every other mlx-c call goes through.

use crate::{Error, Result};
use mlx_ffi as ffi;
use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_void};
use std::panic::Location;
use std::sync::Once;

thread_local! {
    pub(crate) static LAST_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// mlx-c calls this on the thread whose call failed, just before that call returns its
/// failure status, so the message is read back by the same thread.
///
/// # Safety
/// `message` must be null or a NUL-terminated string that stays valid until this returns, as
/// the `char *` mlx-c's `_mlx_error` passes is. `_data` is not read.
unsafe extern "C" fn record_error(message: *const c_char, _data: *mut c_void) {
    let text = if message.is_null() {
        "unknown MLX error".to_owned()
    } else {
        // SAFETY: `message` (non-null) is the NUL-terminated buffer `_mlx_error` formats into and
        // keeps alive until this handler returns; the text is copied out before then.
        unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
    };
    // A panic must not unwind into C; `try_with` fails only during thread teardown.
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            *slot = Some(text);
        }
    });
}

static INIT: Once = Once::new();

/// Opens MLX (once per process: `mlx_ffi::library`) and installs the error handler. Idempotent
/// and cheap after the first call; an MLX that cannot be opened is [`Error::Unavailable`].
pub(crate) fn init() -> Result<()> {
    let library = ffi::library().map_err(Error::Unavailable)?;
    INIT.call_once(|| {
        // SAFETY: `record_error` is a plain function with the handler's signature, valid for the
        // whole process, that neither unwinds nor reads its null data pointer (and no destructor
        // is given). mlx-c stores the handler in unsynchronised globals, read only when an mlx-c
        // call fails, on the calling thread. Only this crate calls into mlx-c, and each of its
        // entry points runs `init` first (see the module docs): `Once` runs this write before any
        // such call, and every later one on any thread happens after `call_once` returns, so no
        // call reads the handler while it is written.
        unsafe { library.api().mlx_set_error_handler(Some(record_error), std::ptr::null_mut(), None) };
    });
    Ok(())
}

/// The mlx-c functions of the MLX this process opened, for calls on existing handles and
/// calls made right after [`init`]: every handle comes from an mlx-c call, and every path to
/// one runs `init` first, so MLX is open whenever this is called.
pub(crate) fn api() -> &'static ffi::MlxC {
    match ffi::loaded() {
        Some(library) => library.api(),
        None => unreachable!("an mlx-c call before MLX was opened (every entry point runs `init` first)"),
    }
}

pub(crate) fn take_error() -> String {
    LAST_ERROR
        .with(|slot| slot.borrow_mut().take())
        .map(without_mlx_c_location)
        .unwrap_or_else(|| "MLX reported a failure without a message".to_owned())
}

/// mlx-c appends " at <its source file>:<line>" to every message; our errors carry the
/// caller's location instead.
pub(crate) fn without_mlx_c_location(message: String) -> String {
    match message.rfind(" at ") {
        Some(at) if message[at..].contains("mlx/c/") => message[..at].to_owned(),
        _ => message,
    }
}

pub(crate) fn clear_error() {
    LAST_ERROR.with(|slot| slot.borrow_mut().take());
}

/// Runs one mlx-c call that reports through a status code.
#[track_caller]
pub(crate) fn check(op: &'static str, call: impl FnOnce() -> i32) -> Result<()> {
    let location = Location::caller();
    init()?;
    clear_error();
    if call() == 0 { Ok(()) } else { Err(Error::Mlx { op, message: take_error(), location }) }
}
