//! Loading weights: the memory-mapped safetensors reader against MLX's own loader, on a
//! 16-tensor, 96 MiB bf16 file (the size class of an e2b vision tower's encoder weights),
//! from open until every tensor is evaluated and one element of each 4 KiB page has been
//! read (so mapped pages are faulted in; the file itself is in the page cache).

extern crate gemma_vision_tensor as tensor;

use criterion::{Criterion, criterion_group, criterion_main};
use std::path::PathBuf;
use tensor::{Array, Dtype, SafetensorsFile, load_safetensors_copying, save_safetensors};

fn fixture() -> PathBuf {
    let path = std::env::temp_dir().join("tensor-bench-load.safetensors");
    if !path.exists() {
        let arrays: Vec<(String, Array)> = (0..16)
            .map(|i| {
                let a = Array::arange(0.0, 768.0 * 4096.0, 1.0, Dtype::F32).unwrap().add(i as f32).unwrap();
                (format!("layers.{i}.weight"), a.reshape(&[4096, 768]).unwrap().astype(Dtype::Bf16).unwrap())
            })
            .collect();
        let refs: Vec<(&str, &Array)> = arrays.iter().map(|(n, a)| (n.as_str(), a)).collect();
        save_safetensors(&path, &refs, None).unwrap();
    }
    path
}

fn touch_all(arrays: impl IntoIterator<Item = Array>) {
    // One bf16 element per 4 KiB page, summed.
    let sums: Vec<Array> = arrays
        .into_iter()
        .map(|a| a.reshape(&[-1, 2048]).unwrap().slice_axis(1, 0, 1).unwrap().sum(&[0, 1], false).unwrap())
        .collect();
    let refs: Vec<&Array> = sums.iter().collect();
    Array::eval_all(&refs).unwrap();
}

fn load(c: &mut Criterion) {
    let path = fixture();
    let mut group = c.benchmark_group("load_safetensors_96MiB");
    group.sample_size(10);
    group.bench_function("mmap", |b| {
        b.iter(|| {
            let file = SafetensorsFile::open(&path).unwrap();
            touch_all(file.names().map(|n| file.load(n).unwrap()).collect::<Vec<_>>());
        })
    });
    group.bench_function("mlx_load_safetensors", |b| {
        b.iter(|| touch_all(load_safetensors_copying(&path).unwrap().into_values()));
    });
    group.finish();
}

criterion_group!(benches, load);
criterion_main!(benches);
