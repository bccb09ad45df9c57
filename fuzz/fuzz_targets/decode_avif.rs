//! Bytes Pillow identifies as AVIF -> `preprocess::decode`; the checks are
//! `common/format_path.rs`'s. Seeded by `cargo xtask fuzz` with Pillow's test images of the format.
#![no_main]

#[path = "../common/format_path.rs"]
mod format_path;

libfuzzer_sys::fuzz_target!(|data: &[u8]| format_path::check(preprocess::Format::Avif, data));
