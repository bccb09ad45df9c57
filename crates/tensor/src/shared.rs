//! [`SharedArray`]: an evaluated array that threads may share.

use crate::{Array, Result};
use std::ops::Deref;

/// An array evaluated at construction, with no pending computation.
///
/// Reading it, or building new graphs that use it as an input, only copies its handle
/// (atomic reference counts) and reads its finished data, so it is `Sync`: model weights are
/// held this way and a loaded model can be shared between threads. Dereferences to [`Array`].
#[derive(Clone, Debug)]
pub struct SharedArray(Array);

// SAFETY: the array is evaluated in `new`; MLX never writes an evaluated array's data while
// other handles to it exist (donation needs a unique reference), and graph construction only
// touches atomic reference counts. See the crate docs' thread model.
unsafe impl Sync for SharedArray {}

impl SharedArray {
    /// Evaluates `array` and wraps it.
    #[track_caller]
    pub fn new(array: Array) -> Result<SharedArray> {
        array.eval()?;
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
