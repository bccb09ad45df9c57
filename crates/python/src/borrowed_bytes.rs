//! [`BorrowedBytes`]: the bytes of an evaluated `mx.array`, read in place through the buffer
//! protocol. The one module of this crate with `unsafe` (one block).
#![allow(unsafe_code, reason = "reading an exporter's buffer in place needs one dereference of its pointer")]
#![deny(clippy::undocumented_unsafe_blocks)]

use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;

/// The bytes of an `mx.array`, row-major, borrowed from MLX's own buffer without a copy.
///
/// Made by [`of_mlx_array`](Self::of_mlx_array) only, so the buffer is always MLX's: an
/// evaluated array's data, every byte of which the op that made it wrote.
#[derive(Debug)]
pub struct BorrowedBytes {
    buffer: PyBuffer<u8>,
}

impl BorrowedBytes {
    /// The bytes of `array` (an `mx.array`): `array.reshape(-1).view(mx.uint8)` exported
    /// through the buffer protocol, which evaluates it. Both ops share the array's buffer when
    /// it is row-contiguous (a parameter is); otherwise MLX makes a contiguous copy first.
    pub fn of_mlx_array(array: &Bound<'_, PyAny>) -> PyResult<BorrowedBytes> {
        let mx = array.py().import("mlx.core")?;
        let bytes = array.call_method1("reshape", (-1,))?.call_method1("view", (mx.getattr("uint8")?,))?;
        Ok(BorrowedBytes { buffer: PyBuffer::get(&bytes)? })
    }

    /// Calls `f` with the bytes; `None` if the export is not C-contiguous (a one-dimensional
    /// `uint8` view always is).
    pub fn with_bytes<R>(&self, _py: Python<'_>, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let slice = self.buffer.as_slice_ptr()?;
        // SAFETY: `as_slice_ptr` addresses the exporter's `item_count` bytes (C-contiguous,
        // checked, and `u8`, checked by `PyBuffer::get`). The memory is live while `self.buffer`
        // is held (the buffer protocol keeps it until `PyBuffer_Release`, run when the buffer
        // drops, and `self` is borrowed for all of `f`), initialised (an evaluated MLX array's
        // data, see the type's docs), and not written while `f` runs: the caller holds the GIL
        // (`_py`), so no Python code runs, and MLX never writes into the buffer of an array
        // something else still references (the export holds a reference: no buffer donation).
        let bytes: &[u8] = unsafe { slice.as_ref() };
        Some(f(bytes))
    }
}
