//! `parse_safetensors_header`: the parser behind `SafetensorsFile::open`, on bytes. Every
//! malformed header is an `Error::Format` naming the file; none panics.

extern crate gemma_vision_tensor as tensor;

use std::path::Path;
use tensor::{Array, Dtype, Error, SafetensorsFile, parse_safetensors_header, save_safetensors};

/// A safetensors file: the 8-byte header length, `header`, then `data`.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

fn format_error(bytes: &[u8]) -> String {
    match parse_safetensors_header(bytes, Path::new("weights.safetensors")) {
        Err(Error::Format { path, detail }) => {
            assert_eq!(path, Path::new("weights.safetensors"));
            detail
        }
        other => panic!("expected a format error, got {other:?}"),
    }
}

#[test]
fn a_saved_file_parses_to_what_open_reports() {
    let dir = tensor::testing::TestDir::new("tensor-test-header");
    let path = dir.join("w.safetensors");
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let b = Array::from_slice(&[7i64], &[1]).unwrap();
    let c = Array::zeros(&[0, 4], Dtype::Bf16).unwrap();
    save_safetensors(&path, &[("a", &a), ("b", &b), ("c", &c)], None).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let parsed = parse_safetensors_header(&bytes, &path).unwrap();
    let opened = SafetensorsFile::open(&path).unwrap();
    assert_eq!(parsed.keys().map(String::as_str).collect::<Vec<_>>(), opened.names().collect::<Vec<_>>());
    for (name, (info, range)) in &parsed {
        assert_eq!(Some(info), opened.info(name), "{name}");
        let elements: usize = info.shape.iter().map(|&d| d as usize).product();
        assert_eq!(range.len(), elements * info.dtype.clone().unwrap().size(), "{name}");
        assert!(range.end <= bytes.len());
    }
    let (_, (_, a_range)) = parsed.iter().find(|(n, _)| *n == "a").unwrap();
    let floats: Vec<f32> =
        bytes[a_range.clone()].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(floats, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
}

#[test]
fn dtypes_mlx_lacks_are_reported_not_rejected() {
    let bytes = file(r#"{"x": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}"#, &[0, 0]);
    let parsed = parse_safetensors_header(&bytes, Path::new("f8.safetensors")).unwrap();
    assert_eq!(parsed["x"].0.dtype, Err("F8_E4M3".to_owned()));
}

#[test]
fn malformed_headers_are_format_errors() {
    let one_float = r#"{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}"#;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "0 bytes is too short"),
        ("short", vec![1, 2, 3], "3 bytes is too short"),
        ("length past the end", 1000u64.to_le_bytes().to_vec(), "invalid safetensors"),
        ("length near u64::MAX", (u64::MAX - 3).to_le_bytes().to_vec(), "invalid safetensors"),
        ("not JSON", file("{nope", &[]), "invalid safetensors"),
        ("not UTF-8", file("{\"\u{0}\"", &[]).into_iter().map(|b| if b == 0 { 0xff } else { b }).collect(), "invalid"),
        ("data missing", file(one_float, &[]), "past the end"),
        ("data too long", file(one_float, &[0; 8]), "invalid safetensors"),
        ("size mismatch", file(r#"{"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}"#, &[0; 4]), "invalid"),
        ("unknown dtype", file(r#"{"x": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 1]}}"#, &[0]), "invalid"),
        (
            "extent beyond i32",
            file(r#"{"x": {"dtype": "U8", "shape": [4294967296, 0], "data_offsets": [0, 0]}}"#, &[]),
            "too large",
        ),
        (
            "overlapping offsets",
            file(
                r#"{"x": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                    "y": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}"#,
                &[0; 4],
            ),
            "invalid",
        ),
    ];
    for (case, bytes, expected) in cases {
        let detail = format_error(&bytes);
        assert!(detail.contains(expected), "{case}: {detail}");
    }
}

#[test]
fn offsets_summing_past_usize_max_are_an_error_not_an_overflow() {
    // Eight tensors of 2^61 - 1 bytes each: their offsets end at 2^64 - 8, and the `safetensors`
    // crate's `header length + 8 + end` would overflow. Rejected before it is computed.
    let size: u64 = (1 << 61) - 1;
    let entries: Vec<String> = (0..8u64)
        .map(|i| {
            format!(
                r#""t{i}": {{"dtype": "U8", "shape": [{size}], "data_offsets": [{}, {}]}}"#,
                i * size,
                (i + 1) * size
            )
        })
        .collect();
    let detail = format_error(&file(&format!("{{{}}}", entries.join(", ")), &[0; 16]));
    assert!(detail.contains("past the end of the file (16 data bytes)"), "{detail}");
}
