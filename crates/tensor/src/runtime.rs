//! Process-wide MLX setup and the one place where C statuses become `Result`s.
//!
//! [`init`] runs once per process (a `std::sync::Once`) before any other MLX call: it
//! replaces mlx-c's default error handler (print, then `exit(-1)`) with one that stores the
//! message in a thread-local slot, and gives the linked BLAS one thread per core. Every
//! entry point of this crate calls it first, so no MLX constructor can run before it.

use crate::{Array, Error, Result};
use mlx_ffi as ffi;
use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_void};
use std::panic::Location;
use std::sync::Once;

thread_local! {
    static LAST_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// mlx-c calls this on the thread whose call failed, just before that call returns its
/// failure status, so the message is read back by the same thread.
unsafe extern "C" fn record_error(message: *const c_char, _data: *mut c_void) {
    let text = if message.is_null() {
        "unknown MLX error".to_owned()
    } else {
        // SAFETY: mlx-c passes a NUL-terminated buffer that lives for this call.
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

/// Installs the error handler and configures the BLAS. Idempotent and cheap after the first call.
pub fn init() {
    INIT.call_once(|| {
        // SAFETY: the handler is a plain function valid for the whole process; no data pointer.
        unsafe { ffi::mlx_set_error_handler(Some(record_error), std::ptr::null_mut(), None) };
        ffi::blas::configure(blas_threads());
    });
}

/// Threads each BLAS call gets by default: one per core.
pub(crate) fn blas_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn take_error() -> String {
    LAST_ERROR
        .with(|slot| slot.borrow_mut().take())
        .map(without_mlx_c_location)
        .unwrap_or_else(|| "MLX reported a failure without a message".to_owned())
}

/// mlx-c appends " at <its source file>:<line>" to every message; our errors carry the
/// caller's location instead.
fn without_mlx_c_location(message: String) -> String {
    match message.rfind(" at ") {
        Some(at) if message[at..].contains("mlx/c/") => message[..at].to_owned(),
        _ => message,
    }
}

fn clear_error() {
    LAST_ERROR.with(|slot| slot.borrow_mut().take());
}

/// Runs one mlx-c call that reports through a status code.
#[track_caller]
pub(crate) fn check(op: &'static str, call: impl FnOnce() -> i32) -> Result<()> {
    let location = Location::caller();
    init();
    clear_error();
    if call() == 0 { Ok(()) } else { Err(Error::Mlx { op, message: take_error(), location }) }
}

/// Runs one mlx-c call that writes a new array into its out-parameter. On failure the
/// (possibly allocated) output handle is freed and MLX's message returned.
#[track_caller]
pub(crate) fn array_op(op: &'static str, call: impl FnOnce(*mut ffi::mlx_array) -> i32) -> Result<Array> {
    let location = Location::caller();
    init();
    clear_error();
    // SAFETY: `mlx_array_new` makes an empty handle; `Array` frees it on every path.
    let mut out = unsafe { Array::from_raw(ffi::mlx_array_new()) };
    if call(out.as_mut_raw()) != 0 {
        return Err(Error::Mlx { op, message: take_error(), location });
    }
    if out.is_empty_handle() {
        return Err(Error::Mlx { op, message: "MLX returned no array".to_owned(), location });
    }
    check_size(op, &out)?;
    Ok(out)
}

/// Rejects an array whose data could not fit in memory: MLX's CPU allocator does not report
/// an impossible allocation; evaluating such an array would crash the process instead.
fn check_size(op: &'static str, array: &Array) -> Result<()> {
    let bytes = crate::array::element_count(&array.shape()).and_then(|n| n.checked_mul(array.dtype().size()));
    let limit = crate::memory::max_array_bytes();
    match bytes {
        Some(bytes) if bytes <= limit => Ok(()),
        _ => Err(Error::TooLarge { op, shape: array.shape(), dtype: array.dtype(), limit }),
    }
}

/// Runs one mlx-c constructor that returns its handle directly and reports failure only
/// through the error handler.
#[track_caller]
pub(crate) fn array_ctor(op: &'static str, call: impl FnOnce() -> ffi::mlx_array) -> Result<Array> {
    let location = Location::caller();
    init();
    clear_error();
    // SAFETY: the handle was just returned to us by mlx-c; `Array` takes ownership.
    let out = unsafe { Array::from_raw(call()) };
    match LAST_ERROR.with(|slot| slot.borrow_mut().take()).map(without_mlx_c_location) {
        Some(message) => Err(Error::Mlx { op, message, location }),
        None if out.is_empty_handle() => Err(Error::Mlx { op, message: "MLX returned no array".to_owned(), location }),
        None => Ok(out),
    }
}

/// The version of the MLX library this process runs on, e.g. `"0.32.2"`.
pub fn mlx_version() -> Result<String> {
    init();
    // SAFETY: `mlx_string_new` makes an empty string handle that we free below.
    let mut text = unsafe { ffi::mlx_string_new() };
    let result = check("mlx_version", || unsafe { ffi::mlx_version(&mut text) }).map(|()| {
        // SAFETY: the string handle is valid until freed; its data is NUL-terminated.
        let ptr = unsafe { ffi::mlx_string_data(text) };
        if ptr.is_null() { String::new() } else { unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned() }
    });
    // SAFETY: freed exactly once.
    unsafe { ffi::mlx_string_free(text) };
    result
}

/// The BLAS serving float32 matmuls on the CPU backend.
pub fn blas() -> ffi::blas::BlasInfo {
    init();
    ffi::blas::info()
}
