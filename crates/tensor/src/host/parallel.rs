//! Splitting host work over the machine's cores.

/// Calls `f` on consecutive chunks of whole rows of `data` (`row_len` values each), on up to
/// one thread per core (on the calling thread alone below 32,768 values); `f` gets the chunk
/// and the index of its first row.
pub fn for_row_chunks(data: &mut [f32], row_len: usize, f: impl Fn(&mut [f32], usize) + Sync) {
    let rows = data.len().checked_div(row_len).unwrap_or(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(rows.max(1));
    if threads <= 1 || rows * row_len < 1 << 15 {
        f(data, 0);
        return;
    }
    let per_thread = rows.div_ceil(threads);
    std::thread::scope(|scope| {
        for (i, chunk) in data.chunks_mut(per_thread * row_len).enumerate() {
            let f = &f;
            scope.spawn(move || f(chunk, i * per_thread));
        }
    });
}
