//! Safetensors files and sharded checkpoints: loading, saving, validation, fingerprints.

extern crate gemma_vision_tensor as tensor;

use std::fs;
use tensor::testing::TestDir;
use tensor::{
    Array, Dtype, Error, SafetensorsFile, ShardedSafetensors, fingerprint, load_safetensors, save_safetensors,
};

fn temp_dir(name: &str) -> TestDir {
    TestDir::new(&format!("tensor-test-{name}"))
}

fn sample() -> Vec<(String, Array)> {
    vec![
        ("a.weight".to_owned(), Array::arange(0.0, 6.0, 1.0, Dtype::Bf16).unwrap().reshape(&[2, 3]).unwrap()),
        ("b.bias".to_owned(), Array::from_slice(&[0.5f32, -1.5], &[2]).unwrap()),
        ("c.ids".to_owned(), Array::from_slice(&[7i64, -1], &[1, 2]).unwrap()),
        ("d.scalar".to_owned(), Array::scalar(3.25f32).unwrap()),
    ]
}

fn save(path: &std::path::Path, tensors: &[(String, Array)]) {
    let refs: Vec<(&str, &Array)> = tensors.iter().map(|(n, a)| (n.as_str(), a)).collect();
    save_safetensors(path, &refs, None).unwrap();
}

#[test]
fn save_then_load_round_trips_every_tensor() {
    let dir = temp_dir("roundtrip");
    let path = dir.join("model.safetensors");
    let tensors = sample();
    save(&path, &tensors);
    let loaded = load_safetensors(&path).unwrap();
    assert_eq!(loaded.len(), tensors.len());
    for (name, original) in &tensors {
        let back = &loaded[name];
        assert_eq!(back.dtype(), original.dtype(), "{name}");
        assert_eq!(back.shape(), original.shape(), "{name}");
        let same = back.with_bytes(|x| original.with_bytes(|y| x == y).unwrap()).unwrap();
        assert!(same, "{name}");
    }
    let file = SafetensorsFile::open(&path).unwrap();
    assert_eq!(file.names().collect::<Vec<_>>(), ["a.weight", "b.bias", "c.ids", "d.scalar"]);
    let info = file.info("a.weight").unwrap();
    assert_eq!(info.dtype, Ok(Dtype::Bf16));
    assert_eq!(info.shape, [2, 3]);
    // Loading a name twice gives the same array, usable in computations.
    let w = file.load("a.weight").unwrap();
    let again = file.load("a.weight").unwrap();
    assert_eq!(
        w.add(&again).unwrap().astype(Dtype::F32).unwrap().to_vec::<f32>().unwrap(),
        [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    );
    assert!(matches!(file.load("missing").unwrap_err(), Error::Format { .. }));
}

#[test]
fn mapped_arrays_outlive_their_file_handle() {
    let dir = temp_dir("outlive");
    let path = dir.join("w.safetensors");
    save(&path, &sample());
    let bias = SafetensorsFile::open(&path).unwrap().load("b.bias").unwrap();
    // The file object is gone; the array keeps the mapping alive, and donation-prone ops work.
    let doubled = bias.add(&bias).unwrap();
    drop(bias);
    assert_eq!(doubled.to_vec::<f32>().unwrap(), [1.0, -3.0]);
}

#[test]
fn malformed_files_are_format_errors() {
    let dir = temp_dir("malformed");
    let good = dir.join("good.safetensors");
    save(&good, &sample());
    let bytes = fs::read(&good).unwrap();

    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("short", bytes[..5].to_vec()),
        ("truncated", bytes[..bytes.len() - 3].to_vec()),
        ("header length beyond file", {
            let mut b = bytes.clone();
            b[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
            b
        }),
        ("garbage header", {
            let mut b = 12u64.to_le_bytes().to_vec();
            b.extend_from_slice(b"not json at!");
            b
        }),
        ("text file", b"hello, this is not a tensor file\n".to_vec()),
    ];
    for (what, contents) in cases {
        let path = dir.join(format!("{}.safetensors", what.replace(' ', "_")));
        fs::write(&path, contents).unwrap();
        let err = SafetensorsFile::open(&path).unwrap_err();
        assert!(matches!(err, Error::Format { .. }), "{what}: {err}");
        assert!(err.to_string().contains(path.file_name().unwrap().to_str().unwrap()), "{what}: names the file: {err}");
    }
    let missing = SafetensorsFile::open(dir.join("nope.safetensors")).unwrap_err();
    assert!(matches!(missing, Error::Io { .. }), "{missing}");
}

#[test]
fn sharded_checkpoints_load_through_their_index() {
    let dir = temp_dir("sharded");
    let tensors = sample();
    save(&dir.join("model-00001-of-00002.safetensors"), &tensors[..2]);
    save(&dir.join("model-00002-of-00002.safetensors"), &tensors[2..]);
    let index = r#"{"metadata": {}, "weight_map": {
        "a.weight": "model-00001-of-00002.safetensors", "b.bias": "model-00001-of-00002.safetensors",
        "c.ids": "model-00002-of-00002.safetensors", "d.scalar": "model-00002-of-00002.safetensors",
        "e.gone": "model-00003-of-00003.safetensors", "f.lost": "model-00002-of-00002.safetensors"}}"#;
    let index_path = dir.join("model.safetensors.index.json");
    fs::write(&index_path, index).unwrap();
    let store = ShardedSafetensors::open(&index_path).unwrap();
    assert_eq!(store.names().count(), 6);
    assert_eq!(store.load("c.ids").unwrap().to_vec::<i64>().unwrap(), [7, -1]);
    assert_eq!(store.info("a.weight").unwrap().shape, [2, 3]);
    // A shard missing from disk is an error naming it, only when one of its tensors is wanted.
    let err = store.load("e.gone").unwrap_err();
    assert!(err.to_string().contains("model-00003-of-00003.safetensors"), "{err}");
    // The index claims a tensor its shard lacks.
    let err = store.load("f.lost").unwrap_err();
    assert!(err.to_string().contains("f.lost"), "{err}");

    fs::write(&index_path, r#"{"weight_map": {"x": "../escape.safetensors"}}"#).unwrap();
    assert!(matches!(ShardedSafetensors::open(&index_path).unwrap_err(), Error::Format { .. }));
    fs::write(&index_path, "{ not json").unwrap();
    assert!(matches!(ShardedSafetensors::open(&index_path).unwrap_err(), Error::Format { .. }));
}

fn refs(t: &[(String, Array)]) -> Vec<(&str, &Array)> {
    t.iter().map(|(n, a)| (n.as_str(), a)).collect()
}

#[test]
fn fingerprint_depends_on_names_shapes_dtypes_and_bytes() {
    let tensors = sample();
    let base = fingerprint(refs(&tensors)).unwrap();
    assert_eq!(base.len(), 64);
    let mut reversed = refs(&tensors);
    reversed.reverse();
    assert_eq!(fingerprint(reversed).unwrap(), base, "order-independent");

    let mut renamed = tensors.clone();
    renamed[0].0 = "a.other".to_owned();
    assert_ne!(fingerprint(refs(&renamed)).unwrap(), base);
    let mut reshaped = tensors.clone();
    reshaped[0].1 = reshaped[0].1.reshape(&[3, 2]).unwrap();
    assert_ne!(fingerprint(refs(&reshaped)).unwrap(), base);
    let mut retyped = tensors.clone();
    retyped[1].1 = retyped[1].1.astype(Dtype::Bf16).unwrap();
    assert_ne!(fingerprint(refs(&retyped)).unwrap(), base);
    let mut changed = tensors.clone();
    changed[3].1 = Array::scalar(3.5f32).unwrap();
    assert_ne!(fingerprint(refs(&changed)).unwrap(), base);
}

#[test]
fn failed_atomic_writes_leave_nothing_behind() {
    let dir = temp_dir("atomic");
    let target = dir.join("out.bin");
    fs::write(&target, b"previous").unwrap();
    let err = tensor::write_atomically(&target, |file| {
        use std::io::Write;
        file.write_all(b"partial")?;
        Err(std::io::Error::other("interrupted"))
    })
    .unwrap_err();
    assert!(matches!(err, Error::Io { .. }));
    assert_eq!(fs::read(&target).unwrap(), b"previous", "the old file is untouched");
    let leftovers: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, [std::ffi::OsString::from("out.bin")], "no temporary file remains");
    tensor::write_atomically(&target, |file| std::io::Write::write_all(file, b"new")).unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"new");
}
