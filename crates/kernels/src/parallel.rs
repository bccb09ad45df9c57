//! Splitting a kernel's independent rows over the machine's cores.

use rayon::prelude::*;

/// The number of threads kernels split work over (rayon's pool: one per core unless
/// `RAYON_NUM_THREADS` says otherwise).
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// Calls `f(first_row, rows)` on consecutive blocks of whole rows of `out` (`row_len`
/// elements each), in parallel. Blocks hold at least `min_rows` rows (the last may hold
/// fewer) and are sized so every thread gets a few; below `2 · min_rows` rows everything
/// runs on the calling thread. Each output row is computed by exactly one call, so the
/// result does not depend on the split.
pub fn for_row_blocks<T: Send>(out: &mut [T], row_len: usize, min_rows: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let rows = out.len().checked_div(row_len).unwrap_or(0);
    let min_rows = min_rows.max(1);
    if rows < 2 * min_rows || threads() <= 1 {
        f(0, out);
        return;
    }
    let block = rows.div_ceil(4 * threads()).max(min_rows);
    out.par_chunks_mut(block * row_len).enumerate().for_each(|(i, chunk)| f(i * block, chunk));
}
