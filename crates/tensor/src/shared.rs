//! [`SharedArray`]: an evaluated array that threads may share.

use crate::status::{api, check};
use crate::{Array, Result};
use std::ops::Deref;

/// An array evaluated at construction, with no pending computation.
///
/// Reading it, or building new graphs that use it as an input, only copies its handle
/// (atomic reference counts) and reads its finished data, so it is `Sync`: model weights are
/// held this way and a loaded model can be shared between threads. Dereferences to [`Array`].
#[derive(Clone, Debug)]
pub struct SharedArray(Array);

// SAFETY: `new` evaluates the array and waits for it, leaving its node in MLX's final state
// (`available`, no event, no inputs, no primitive); from then on MLX only reads the node:
// `eval`, `is_available` and `wait` return without writing, graph construction copies the handle
// (atomic reference counts), and a graph using it as an input reads its buffer. MLX writes into
// an input's buffer (donation) only when that array holds the sole reference to its descriptor
// and buffer, and the `SharedArray` keeps a reference of its own for as long as any thread can
// borrow it. So threads sharing `&SharedArray` only ever read it. See the crate docs' thread model.
unsafe impl Sync for SharedArray {}

impl SharedArray {
    /// Evaluates `array` and wraps it.
    #[track_caller]
    pub fn new(array: Array) -> Result<SharedArray> {
        array.eval()?;
        // Evaluation leaves the node `evaluated`; the first `wait` (or `is_available`) moves it to
        // `available`, writing to it. Do that here, while this thread is its only user, so that
        // no later read from a sharing thread writes.
        // SAFETY: `array.raw` is live while `array` is; `_mlx_array_wait` takes no other argument.
        check("wait", || unsafe { api()._mlx_array_wait(array.as_raw()) })?;
        Ok(SharedArray(array))
    }

    /// The array, for use where an owned [`Array`] is wanted.
    pub fn into_inner(self) -> Array {
        self.0
    }
}

impl Deref for SharedArray {
    type Target = Array;

    fn deref(&self) -> &Array {
        &self.0
    }
}

impl AsRef<Array> for SharedArray {
    fn as_ref(&self) -> &Array {
        &self.0
    }
}
