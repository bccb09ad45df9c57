//! [`SharedArray`]: an evaluated, settled array: what crosses threads.

use crate::status::{api, check, clear_error, take_error};
use crate::{Array, Error, Result};
use std::ops::Deref;
use std::panic::Location;

/// An array evaluated and *settled* at construction, which MLX from then on only reads.
///
/// Settled means that the MLX node it refers to is in the state MLX never moves a node out of:
/// - its status is `available` (evaluated, waited for, the `evaluated` → `available` step
///   taken) and it holds no event;
/// - it holds no primitive, inputs or siblings (evaluation released them), so no graph walk
///   goes through it and nothing evaluates it again;
/// - its buffer is where the host reads it (MLX's CUDA backend moves a device buffer to
///   unified memory on the first host read; that move is done here).
///
/// So reading it, or building and evaluating new graphs on it, on any number of threads at
/// once only copies its handle (atomic reference counts) and reads its data: a `SharedArray`
/// is `Send + Sync`. It is the one array type that crosses threads ([`Array`] is neither
/// `Send` nor `Sync`): model weights are held this way, and a loaded model is shared between
/// threads as `Arc<Model>`. Dereferences to [`Array`]; clones (and [`into_inner`](Self::into_inner))
/// refer to the same settled node.
#[derive(Clone, Debug)]
pub struct SharedArray(Array);

// SAFETY: a `SharedArray` holds a handle of its own to a settled node (see the type's docs).
// `new` settles it while its thread is the only one that can reach the node (every other handle
// is an `Array` of that thread) or finds it settled already, when its calls only read: `eval`
// returns after the whole graph was computed and detached from the node (MLX clears an
// evaluated non-tracer's primitive, inputs and siblings), `wait` moves it to `available` and
// drops its event, and reading its data pointer moves a CUDA device buffer to unified memory (a
// no-op on the CPU and Metal). MLX never moves a node out of that state: `array::eval`, `wait`
// and `is_available` return on seeing `available` without writing; a graph walk (`eval_impl`)
// skips inputs that are not `unscheduled`, never detaches one without a primitive and finds no
// event or fence on it; a kernel reads its buffer; and a buffer in unified memory is not moved
// again. The one write MLX makes to an input's buffer or descriptor, donation, needs them to
// have no other reference, which this handle rules out while any thread can reach the node
// through it. Every other node a thread can reach is its own (`Array` is neither `Send` nor
// `Sync`). Dropping a handle on any thread decrements atomic reference counts; the last one
// frees the buffer through MLX's allocator, which locks, or through a deleter this crate gave
// MLX, which is `Send` (`from_vec`'s vector, a safetensors file's mapping).
unsafe impl Send for SharedArray {}
// SAFETY: as for `Send` above: through `&SharedArray`, MLX only reads the settled node.
unsafe impl Sync for SharedArray {}

impl SharedArray {
    /// Evaluates `array` and settles it (see the type's docs). Other handles to the same node
    /// on this thread see it settled too.
    #[track_caller]
    pub fn new(array: Array) -> Result<SharedArray> {
        array.eval()?;
        // Evaluation leaves the node `evaluated`; the first `wait` (or `is_available`) moves it to
        // `available`, writing to it. Done here, while this thread is its only user.
        // SAFETY: `array.raw` is live while `array` is; `_mlx_array_wait` takes no other argument.
        check("wait", || unsafe { api()._mlx_array_wait(array.as_raw()) })?;
        if array.nbytes() > 0 {
            clear_error();
            // SAFETY: `array.raw` is live and evaluated; `mlx_array_data_uint8` only computes the
            // address of its data (moving a CUDA device buffer to unified memory first, on this
            // thread, the node's only user), or returns null and reports an error. The pointer
            // is not kept.
            let data = unsafe { api().mlx_array_data_uint8(array.as_raw()) };
            if data.is_null() {
                return Err(Error::Mlx { op: "settle", message: take_error(), location: Location::caller() });
            }
        }
        Ok(SharedArray(array))
    }

    /// The array, for use where an owned [`Array`] is wanted (on this thread: an [`Array`]
    /// does not cross threads). Still the same settled node.
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
