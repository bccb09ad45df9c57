//! Working memory the kernels reuse between calls: packed operands and accumulator tiles live
//! in buffers that are allocated (and first touched) once, not on every product, so a product
//! pays neither the allocator's page faults nor a zero fill.
//!
//! - [`with_scratch`]: the calling thread's own buffer (a task's packed panels and tiles).
//! - [`with_shared`]: a buffer several threads fill and read within one call (an operand packed
//!   once for every task), taken from a small process-wide pool.
//!
//! The contents of a buffer handed out are unspecified (whatever the last user left, or
//! zeros): users write every element they read.

use std::cell::RefCell;
use std::sync::Mutex;

thread_local! {
    /// Each thread's scratch, kept between calls.
    static SCRATCH: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Calls `f` with `len` floats of this thread's scratch (contents unspecified). A nested call
/// on the same thread gets a fresh buffer.
pub(crate) fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buffer) => {
            if buffer.len() < len {
                buffer.resize(len, 0.0);
            }
            f(&mut buffer[..len])
        }
        Err(_) => f(&mut vec![0.0; len]),
    })
}

/// Buffers [`with_shared`] keeps for the next call (the largest ones).
const POOLED: usize = 4;

/// Buffers returned by [`with_shared`], ready for the next call.
static POOL: Mutex<Vec<Vec<f32>>> = Mutex::new(Vec::new());

/// Calls `f` with a buffer of `len` floats (contents unspecified) that `f` may share between
/// threads; the buffer goes back to a process-wide pool afterwards (the [`POOLED`] largest are
/// kept).
pub(crate) fn with_shared<R>(len: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
    let mut buffer = take(len);
    if buffer.len() < len {
        buffer.resize(len, 0.0);
    }
    let result = f(&mut buffer[..len]);
    give_back(buffer);
    result
}

/// The smallest pooled buffer that holds `len` floats, else the largest one (to grow), else a
/// new one.
fn take(len: usize) -> Vec<f32> {
    let mut pool = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let fitting = pool.iter().enumerate().filter(|(_, b)| b.len() >= len).min_by_key(|(_, b)| b.len()).map(|(i, _)| i);
    let chosen = fitting.or_else(|| pool.iter().enumerate().max_by_key(|(_, b)| b.len()).map(|(i, _)| i));
    chosen.map(|i| pool.swap_remove(i)).unwrap_or_default()
}

fn give_back(buffer: Vec<f32>) {
    let mut pool = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    pool.push(buffer);
    if pool.len() > POOLED {
        // Drop the smallest: the large buffers are the ones worth keeping.
        if let Some(smallest) = pool.iter().enumerate().min_by_key(|(_, b)| b.len()).map(|(i, _)| i) {
            pool.swap_remove(smallest);
        }
    }
}
