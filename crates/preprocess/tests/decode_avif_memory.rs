//! Decoding an AVIF returns every byte it allocates: the AV1 decoder's context, its pictures and
//! what their release leaves behind (`decode/avif/av1.rs`). Counted with a global allocator that
//! tracks live bytes; this binary holds this one test, so nothing else allocates meanwhile.
#![allow(unsafe_code, reason = "a counting global allocator forwards to the system allocator")]

extern crate gemma_vision_preprocess as preprocess;

use preprocess::{DecodeOptions, decode};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, with a running count of the bytes live.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call forwards to `System` with the caller's arguments; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::SeqCst);
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        // SAFETY: `ptr` came from this allocator, so from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(new_size as isize - layout.size() as isize, Ordering::SeqCst);
        // SAFETY: the caller's contract for `realloc` is `System.realloc`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn decoding_an_avif_leaves_no_bytes_allocated() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/avif");
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
