//! `ShardedSafetensors::from_files`: several files read together as mlx-vlm merges them
//! (`weights.update(mx.load(f))` file by file), headers read at once, clashes reported.

extern crate gemma_vision_tensor as tensor;

use std::fs;
use tensor::testing::TestDir;
use tensor::{Array, Dtype, Error, ShardedSafetensors, save_safetensors};

fn temp_dir(name: &str) -> TestDir {
    TestDir::new(&format!("tensor-test-{name}"))
}

fn save(path: &std::path::Path, tensors: &[(&str, f32)]) {
    let arrays: Vec<(&str, Array)> =
        tensors.iter().map(|&(n, v)| (n, Array::from_slice(&[v, v], &[2]).unwrap())).collect();
    let refs: Vec<(&str, &Array)> = arrays.iter().map(|(n, a)| (*n, a)).collect();
    save_safetensors(path, &refs, None).unwrap();
}

#[test]
fn later_files_win_and_clashes_are_listed() {
    let dir = temp_dir("from-files");
    let (a, b) = (dir.join("a.safetensors"), dir.join("b.safetensors"));
    save(&a, &[("x", 1.0), ("shared", 2.0)]);
    save(&b, &[("y", 3.0), ("shared", 4.0)]);
    let files = ShardedSafetensors::from_files(&dir, &[a.clone(), b.clone()]).unwrap();
    assert_eq!(files.names().collect::<Vec<_>>(), ["shared", "x", "y"]);
    assert_eq!(files.load("shared").unwrap().to_vec::<f32>().unwrap(), [4.0, 4.0], "the later file's tensor");
    assert_eq!(files.file_of("x"), Some(a.as_path()));
    assert_eq!(files.file_of("shared"), Some(b.as_path()));
    assert_eq!(files.shadowed(), [("shared".to_owned(), a.clone(), b.clone())]);
    assert_eq!(files.files(), [a.as_path(), b.as_path()]);
    assert_eq!(files.info("y").unwrap().dtype, Ok(Dtype::F32));
    // Reversed, the other file wins.
    let reversed = ShardedSafetensors::from_files(&dir, &[b.clone(), a.clone()]).unwrap();
    assert_eq!(reversed.load("shared").unwrap().to_vec::<f32>().unwrap(), [2.0, 2.0]);
    // A name no file holds names the whole; a bad file fails at once, naming it.
    match files.load("z") {
        Err(Error::Format { path, detail }) => {
            assert_eq!(path, *dir);
            assert!(detail.contains("no tensor named `z`"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    let bad = dir.join("bad.safetensors");
    fs::write(&bad, b"garbage, not a header").unwrap();
    match ShardedSafetensors::from_files(&dir, &[a, bad.clone()]) {
        Err(Error::Format { path, .. }) => assert_eq!(path, bad),
        other => panic!("{other:?}"),
    }
}
