//! Large pixel buffers recycled from one image to the next.
//!
//! A 12-megapixel RGB image is 36 MB, more than glibc's largest mmap threshold (32 MiB): without
//! recycling, every decode of such an image maps fresh memory, page-faults it in (the kernel
//! zeroes every page) and unmaps it when the image is dropped, which costs about as much as a
//! third of the JPEG decode itself. [`RgbImage`](crate::RgbImage) hands its buffer back here when
//! dropped, and the next decoder, resize or orientation that needs a buffer of similar size takes
//! it. At most [`MAX_BUFFERS`] buffers of [`MIN_BYTES`]..=[`MAX_BYTES`] are kept. The lower
//! bound is well below the mmap threshold on purpose: a block that the allocator recycles is
//! zeroed again by every `vec![0; n]`, which a buffer about to be overwritten does not need.

use std::sync::Mutex;

/// Smaller buffers are left to the allocator, which recycles them itself.
pub const MIN_BYTES: usize = 1 << 20;
/// Larger buffers are freed, so that at most `MAX_BUFFERS * MAX_BYTES` stay allocated after
/// the images are gone (a 32-megapixel RGB image is 96 MiB).
pub const MAX_BYTES: usize = 96 << 20;
/// Buffers kept at once (an image being decoded while the previous one is still alive).
pub const MAX_BUFFERS: usize = 2;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// A buffer of `len` bytes whose contents are unspecified (a previous image's pixels): only for
/// callers that overwrite every byte.
pub fn take(len: usize) -> Vec<u8> {
    if len >= MIN_BYTES
        && let Ok(mut pool) = POOL.lock()
    {
        // The smallest buffer that fits without wasting more than half of it.
        let fits = |v: &Vec<u8>| v.capacity() >= len && v.capacity() / 2 <= len;
        let best = pool.iter().enumerate().filter(|(_, v)| fits(v)).min_by_key(|(_, v)| v.capacity()).map(|(i, _)| i);
        if let Some(i) = best {
            let mut buffer = pool.swap_remove(i);
            // Truncates, or zero-fills only the part past the buffer's previous length.
            buffer.resize(len, 0);
            return buffer;
        }
    }
    vec![0u8; len]
}

/// Keeps `buffer` for a later [`take`] if it is large enough to be worth it; the smallest kept
/// buffer is freed when there are too many.
pub fn give(buffer: Vec<u8>) {
    if !(MIN_BYTES..=MAX_BYTES).contains(&buffer.capacity()) {
        return;
    }
    if let Ok(mut pool) = POOL.lock() {
        pool.push(buffer);
        if pool.len() > MAX_BUFFERS
            && let Some(smallest) = pool.iter().enumerate().min_by_key(|(_, v)| v.capacity()).map(|(i, _)| i)
        {
            pool.swap_remove(smallest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_buffers_are_fresh_and_zeroed() {
        assert_eq!(take(10), vec![0u8; 10]);
        give(vec![1u8; 10]);
        assert_eq!(take(10), vec![0u8; 10]);
    }

    #[test]
    fn a_large_buffer_is_reused_with_the_requested_length() {
        let len = MIN_BYTES + 12_345;
        let buffer = vec![7u8; len];
        let address = buffer.as_ptr();
        give(buffer);
        // Other tests may take it first; when this one does, it is the same memory.
        let again = take(len - 5);
        assert_eq!(again.len(), len - 5);
        if again.as_ptr() == address {
            assert!(again.iter().all(|&b| b == 7));
        }
        let grown = take(len + 100);
        assert_eq!(grown.len(), len + 100);
    }
}
