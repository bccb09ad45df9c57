//! The host-side safetensors codec: files written from bytes, headers read without the data.

extern crate gemma_vision_tensor as tensor;

use std::collections::BTreeMap;
use std::fs;
use tensor::testing::TestDir;
use tensor::{Dtype, Error, TensorBytes, read_safetensors_header, write_safetensors};

fn metadata() -> BTreeMap<String, String> {
    BTreeMap::from([("format".to_owned(), "test/1".to_owned()), ("rows".to_owned(), "[1, 2]".to_owned())])
}

#[test]
fn a_file_written_from_bytes_is_safetensors_and_its_header_reads_back_without_the_data() {
    let dir = TestDir::new("tensor-codec-roundtrip");
    let path = dir.join("shard.safetensors");
    let counts: Vec<u8> = [3i32, 1].iter().flat_map(|n| n.to_le_bytes()).collect();
    let features: Vec<u8> = (0..16u8).collect();
    let tensors = [
        TensorBytes { name: "soft_tokens", dtype: Dtype::I32, shape: &[2], data: &counts },
        TensorBytes { name: "features", dtype: Dtype::Bf16, shape: &[4, 2], data: &features },
    ];
    write_safetensors(&path, &tensors, &metadata()).unwrap();

    // Any safetensors reader reads it: the `safetensors` crate, and MLX's loader.
    let bytes = fs::read(&path).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(file.tensor("features").unwrap().data(), &features[..]);
    assert_eq!(file.tensor("soft_tokens").unwrap().shape(), [2]);
    let (_, header) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    assert_eq!(header.metadata().as_ref().unwrap()["rows"], "[1, 2]");
    let loaded = tensor::load_safetensors(&path).unwrap();
    assert_eq!(loaded["features"].shape(), [4, 2]);

    let read = read_safetensors_header(&path).unwrap();
    assert_eq!(read.metadata, metadata());
    let (info, range) = &read.tensors["features"];
    assert_eq!((info.dtype.clone(), info.shape.clone()), (Ok(Dtype::Bf16), vec![4, 2]));
    assert_eq!(&bytes[range.clone()], &features[..]);
    assert_eq!(&bytes[read.tensors["soft_tokens"].1.clone()], &counts[..]);

    // Metadata alone (no tensors) is a valid file too.
    write_safetensors(dir.join("empty.safetensors"), &[], &metadata()).unwrap();
    assert!(read_safetensors_header(dir.join("empty.safetensors")).unwrap().tensors.is_empty());
}

#[test]
fn files_cut_short_or_padded_and_bad_tensors_are_format_errors() {
    let dir = TestDir::new("tensor-codec-bad");
    let path = dir.join("a.safetensors");
    let data = [0u8; 8];
    write_safetensors(&path, &[TensorBytes { name: "x", dtype: Dtype::F32, shape: &[2], data: &data }], &metadata())
        .unwrap();
    let bytes = fs::read(&path).unwrap();
    for (name, cut) in [("cut", &bytes[..bytes.len() - 1]), ("header-cut", &bytes[..20]), ("tiny", &bytes[..5])] {
        let file = dir.join(name);
        fs::write(&file, cut).unwrap();
        let error = read_safetensors_header(&file).unwrap_err();
        assert!(matches!(error, Error::Format { .. }), "{name}: {error:?}");
    }
    let longer = dir.join("longer");
    fs::write(&longer, [&bytes[..], b"x"].concat()).unwrap();
    assert!(read_safetensors_header(&longer).unwrap_err().to_string().contains("its header describes"));

    let wrong = [TensorBytes { name: "x", dtype: Dtype::F32, shape: &[3], data: &data }];
    assert!(write_safetensors(dir.join("w"), &wrong, &metadata()).unwrap_err().to_string().contains("do not fill"));
    let twice = [
        TensorBytes { name: "x", dtype: Dtype::U8, shape: &[8], data: &data },
        TensorBytes { name: "x", dtype: Dtype::U8, shape: &[8], data: &data },
    ];
    assert!(write_safetensors(dir.join("t"), &twice, &metadata()).unwrap_err().to_string().contains("twice"));
    assert!(!dir.join("w").exists() && !dir.join("t").exists(), "a refused file is never created");
    assert!(matches!(read_safetensors_header(dir.join("missing")).unwrap_err(), Error::Io { .. }));
}
