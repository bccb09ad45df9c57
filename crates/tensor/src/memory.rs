//! MLX's allocator statistics (bytes), for leak tests and reports.

use crate::Result;
use crate::runtime::check;

fn read(op: &'static str, call: unsafe extern "C" fn(*mut usize) -> i32) -> Result<usize> {
    let mut bytes = 0usize;
    check(op, || unsafe { call(&mut bytes) })?;
    Ok(bytes)
}

/// Bytes held by live arrays.
pub fn active_memory() -> Result<usize> {
    read("get_active_memory", mlx_ffi::mlx_get_active_memory)
}

/// The high-water mark of [`active_memory`] since start or the last [`reset_peak_memory`].
pub fn peak_memory() -> Result<usize> {
    read("get_peak_memory", mlx_ffi::mlx_get_peak_memory)
}

/// Bytes MLX keeps cached for reuse (freed buffers not yet returned to the system).
pub fn cache_memory() -> Result<usize> {
    read("get_cache_memory", mlx_ffi::mlx_get_cache_memory)
}

/// Resets the peak counter.
pub fn reset_peak_memory() -> Result<()> {
    check("reset_peak_memory", || unsafe { mlx_ffi::mlx_reset_peak_memory() })
}

/// Returns cached buffers to the system.
pub fn clear_cache() -> Result<()> {
    check("clear_cache", || unsafe { mlx_ffi::mlx_clear_cache() })
}
