//! MLX's allocator statistics (bytes), for leak tests and reports.

use crate::Result;
use crate::status::{api, check};
use std::sync::atomic::{AtomicUsize, Ordering};

static MAX_ARRAY_BYTES: AtomicUsize = AtomicUsize::new(0);

/// The largest array, in bytes, an operation may produce: this machine's physical memory,
/// unless set with [`set_max_array_bytes`]. Larger results are an
/// [`Error::TooLarge`](crate::Error::TooLarge) when the operation is built, before MLX would
/// try (and, on its CPU backend, crash) to allocate them.
pub fn max_array_bytes() -> usize {
    match MAX_ARRAY_BYTES.load(Ordering::Relaxed) {
        0 => physical_memory(),
        limit => limit,
    }
}

/// Sets the limit of [`max_array_bytes`] for this process (0 restores the default).
pub fn set_max_array_bytes(bytes: usize) {
    MAX_ARRAY_BYTES.store(bytes, Ordering::Relaxed);
}

fn physical_memory() -> usize {
    // SAFETY: `sysconf` takes a plain integer name and has no preconditions; unknown names
    // return -1, which the match below rejects.
    let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    match (usize::try_from(pages), usize::try_from(page_size)) {
        (Ok(pages), Ok(size)) if pages > 0 && size > 0 => pages.saturating_mul(size),
        _ => usize::MAX,
    }
}

/// Runs one of mlx-c's allocator getters, `call(&mut bytes)`, and returns what it wrote.
fn read(op: &'static str, call: impl FnOnce(&mut usize) -> i32) -> Result<usize> {
    let mut bytes = 0usize;
    check(op, || call(&mut bytes))?;
    Ok(bytes)
}

/// Bytes held by live arrays.
pub fn active_memory() -> Result<usize> {
    // SAFETY: the getter writes the allocator's active byte count, one `size_t`, through the
    // valid, exclusive `bytes` reference, and reads nothing else.
    read("get_active_memory", |bytes| unsafe { api().mlx_get_active_memory(bytes) })
}

/// The high-water mark of [`active_memory`] since start or the last [`reset_peak_memory`].
pub fn peak_memory() -> Result<usize> {
    // SAFETY: the getter writes the allocator's peak count, one `size_t`, through the valid,
    // exclusive `bytes` reference, and reads nothing else.
    read("get_peak_memory", |bytes| unsafe { api().mlx_get_peak_memory(bytes) })
}

/// Bytes MLX keeps cached for reuse (freed buffers not yet returned to the system).
pub fn cache_memory() -> Result<usize> {
    // SAFETY: the getter writes the allocator's cached byte count, one `size_t`, through the
    // valid, exclusive `bytes` reference, and reads nothing else.
    read("get_cache_memory", |bytes| unsafe { api().mlx_get_cache_memory(bytes) })
}

/// Resets the peak counter.
pub fn reset_peak_memory() -> Result<()> {
    // SAFETY: no arguments and no preconditions (the allocator's counters are its own).
    check("reset_peak_memory", || unsafe { api().mlx_reset_peak_memory() })
}

/// Returns cached buffers to the system.
pub fn clear_cache() -> Result<()> {
    // SAFETY: no arguments and no preconditions: only buffers no array uses are released.
    check("clear_cache", || unsafe { api().mlx_clear_cache() })
}

/// Asks the C allocator to keep freed memory for reuse instead of returning it to the system.
///
/// MLX's CPU backend allocates every intermediate array with `malloc` and has no buffer cache
/// (its GPU backends do). With glibc's defaults, blocks of a few MiB and more are mapped on
/// allocation and unmapped on free, so every page of every large intermediate faults in
/// again, zero-filled, in each op; the larger the batch, the more of them. After this call,
/// blocks of every size come from the allocator's heaps (no fresh mappings) and freed memory
/// stays mapped: resident memory stays near its peak after a forward pass instead of falling
/// back. (glibc still maps a block too large for a secondary thread's arena, 64 MiB and up,
/// afresh each time. Where the process's threads use several arenas before the encoding
/// starts, as in a Ray worker, freed blocks may still fault in again: start such a process with
/// `MALLOC_ARENA_MAX=1` too.)
///
/// Process-wide and permanent (it changes `malloc`'s policy for all code in the process), so
/// the library never calls it by itself: the `gemma-vision` command, the Python package's
/// corpus jobs and the benchmarks do. Returns whether the allocator accepted it (always
/// `false` where the C library is not glibc).
pub fn retain_freed_host_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` takes two integers and only changes allocator parameters; glibc
        // accepts or refuses (returns 0 for) any value.
        unsafe { libc::mallopt(libc::M_MMAP_MAX, 0) == 1 && libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}
