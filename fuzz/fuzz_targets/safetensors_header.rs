//! Arbitrary bytes -> `tensor::parse_safetensors_header`, the parser `SafetensorsFile::open`
//! runs on a mapped file. Every input must end in `Ok` or `Err(Error::Format)`; a panic (an
//! overflow, an out-of-range slice) is a finding.
//!
//! An accepted header must describe the bytes it came from: each tensor's data lies inside the
//! input and holds exactly `shape` elements of its dtype, and the tensors tile the data section
//! to the end of the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use tensor::{Error, parse_safetensors_header};

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz/model.safetensors");
    let tensors = match parse_safetensors_header(data, path) {
        Ok(tensors) => tensors,
        Err(Error::Format { path: named, .. }) => {
            assert_eq!(named, path);
            return;
        }
        Err(other) => panic!("a non-format error: {other}"),
    };
    let mut ranges: Vec<_> = tensors.values().map(|(_, range)| range.clone()).collect();
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut next = ranges.first().map_or(data.len(), |r| r.start);
    assert!(next >= 8, "data starts inside the length prefix");
    for range in &ranges {
        assert_eq!(range.start, next, "data ranges tile the data section");
        next = range.end;
    }
    assert_eq!(next, data.len(), "the data section ends with the file");
    for (name, (info, range)) in &tensors {
        assert!(info.shape.iter().all(|&d| d >= 0), "{name}: {:?}", info.shape);
        if let Ok(dtype) = &info.dtype {
            let elements: usize = info.shape.iter().map(|&d| d as usize).product();
            assert_eq!(range.len(), elements * dtype.size(), "{name}");
        }
    }
});
