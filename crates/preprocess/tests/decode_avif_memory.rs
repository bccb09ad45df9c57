//! Decoding an AVIF returns every byte it allocates: the AV1 decoder's context, its pictures and
//! what their release leaves behind (`decode/avif/av1.rs`). Counted with a global allocator that
//! tracks the live bytes of the thread that decodes (the decoder runs on the caller's thread:
//! one decoding thread, no workers), so that the test harness's own threads, which allocate
//! when they please, are not counted.
#![allow(unsafe_code, reason = "a counting global allocator forwards to the system allocator")]

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, decode};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, with a running count of the bytes that counting threads allocate and
/// free.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    /// Whether this thread's allocations count (no destructor and a constant initialiser, so
    /// reading it never allocates).
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

/// Adds `bytes` to the count when the calling thread is counted.
fn count(bytes: isize) {
    if COUNTED.try_with(Cell::get).unwrap_or(false) {
        LIVE_BYTES.fetch_add(bytes, Ordering::SeqCst);
    }
}

// SAFETY: every call forwards to `System` with the caller's arguments; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: `ptr` came from this allocator, so from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: the caller's contract for `realloc` is `System.realloc`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn decoding_an_avif_leaves_no_bytes_allocated() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/avif");
    COUNTED.with(|counted| counted.set(true));
    for file in ["yuv420_full.avif", "alpha.avif"] {
        let bytes = std::fs::read(dir.join(file)).expect(file);
        let options = DecodeOptions::default();
        // The first decode may set up process-wide state (CPU feature tables) that stays.
        drop(decode(&bytes, &options).expect(file));
        let before = LIVE_BYTES.load(Ordering::SeqCst);
        for _ in 0..8 {
            drop(decode(&bytes, &options).expect(file));
        }
        let after = LIVE_BYTES.load(Ordering::SeqCst);
        assert_eq!(after - before, 0, "{file}: 8 decodes left {} bytes allocated", after - before);
    }
}
