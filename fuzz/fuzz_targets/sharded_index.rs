//! Arbitrary bytes -> a `model.safetensors.index.json` -> `tensor::ShardedSafetensors::open`
//! and the lookups a checkpoint makes. The index is written to a file (in /dev/shm when it
//! exists, else the temporary directory) because `open` reads a path; the file is the real
//! parser's only input. Every input must end in `Ok` or a typed `Err`; a panic is a finding.
//!
//! An accepted index must keep every shard inside its own directory (no `/`, `\` or `..`), and
//! looking a tensor up (which opens its shard: here missing, or the index itself) must fail
//! with an error naming a file, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tensor::{Error, ShardedSafetensors};

/// `<tmpfs>/fuzz-sharded-index-<pid>/model.safetensors.index.json`; the directory exists only
/// while an input runs, so nothing is left behind when the fuzzer stops.
fn index_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() { "/dev/shm".into() } else { std::env::temp_dir() };
        base.join(format!("fuzz-sharded-index-{}", std::process::id())).join("model.safetensors.index.json")
    })
}

fuzz_target!(|data: &[u8]| {
    let path = index_path();
    let dir = path.parent().expect("the index has a directory");
    std::fs::create_dir_all(dir).expect("a scratch directory");
    std::fs::write(path, data).expect("writing the index");
    check(path);
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir(dir);
});

fn check(path: &Path) {
    let files = match ShardedSafetensors::open(path) {
        Ok(files) => files,
        Err(Error::Format { path: named, .. } | Error::Io { path: named, .. }) => {
            assert_eq!(named, path);
            return;
        }
        Err(other) => panic!("a non-file error: {other}"),
    };
    assert_eq!(files.source(), path);
    for name in files.names().take(8) {
        assert!(files.contains(name));
        match files.info(name) {
            Ok(info) => panic!("`{name}` found in a shard that cannot hold it: {info:?}"),
            Err(Error::Format { path: shard, .. } | Error::Io { path: shard, .. }) => {
                let dir = path.parent().expect("the index has a directory");
                assert!(shard.starts_with(dir), "shard {} outside the index's directory", shard.display());
            }
            Err(other) => panic!("a non-file error: {other}"),
        }
    }
    assert!(files.info("\u{0}not listed").is_err());
}
