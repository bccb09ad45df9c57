//! The decode target of one format, built once for every format `preprocess` reads: the binary
//! `decode_<format>` (Pillow's name in lower case) fuzzes that format's decoder. The targets are
//! `Cargo.toml`'s generated section, made from `preprocess`'s format table; the checks are
//! `common/format_path.rs`'s. `cargo xtask fuzz` seeds each with Pillow's test images of its
//! format.
#![no_main]

#[path = "../common/format_path.rs"]
mod format_path;

libfuzzer_sys::fuzz_target!(|data: &[u8]| format_path::check(format_path::target_format(), data));
