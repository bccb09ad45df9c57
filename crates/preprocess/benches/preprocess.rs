//! Decode + resize + encoder input of a 12-megapixel JPEG and a 1024x768 PNG at budgets 280
//! and 1120 (the gemma4_unified input: it includes the patchify), plus the decode and the
//! resize alone.
//!
//! Inputs: the files in `$PREPROCESS_BENCH_DIR` (`photo_4000x3000.jpg`, `photo_1024x768.png`,
//! written by `crates/parity/python/preprocess.py --bench` so that `cargo xtask bench
//! preprocess` times the reference on the same bytes), else synthetic ones made here.
//! Threads: rayon's pool (`RAYON_NUM_THREADS=1` for one core).

extern crate gemma_vision_preprocess as preprocess;

use criterion::{Criterion, criterion_group, criterion_main};
use preprocess::{DecodeOptions, Preprocessor, ProcessorConfig, decode, resize_bicubic};
use std::hint::black_box;
use std::path::PathBuf;

const FILES: &[&str] = &["photo_4000x3000.jpg", "photo_1024x768.png"];
const BUDGETS: &[u32] = &[280, 1120];

fn inputs() -> Vec<(String, Vec<u8>)> {
    let dir = std::env::var_os("PREPROCESS_BENCH_DIR").map(PathBuf::from);
    FILES
        .iter()
        .map(|name| {
            let bytes = match &dir {
                Some(dir) => std::fs::read(dir.join(name)).expect("bench input"),
                None => synthetic(name),
            };
            (name.rsplit_once('.').map_or(*name, |(stem, _)| stem).to_owned(), bytes)
        })
        .collect()
}

/// A photo-like image (smooth gradients and noise) encoded like the named file.
fn synthetic(name: &str) -> Vec<u8> {
    let (w, h) = if name.ends_with(".jpg") { (4000usize, 3000usize) } else { (1024, 768) };
    let mut state = 0x2545_f491_u32;
    let mut pixels = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let noise = (state % 32) as usize;
            pixels.extend([(x * 255 / w + noise) as u8, (y * 255 / h + noise) as u8, ((x + y) % 256) as u8]);
        }
    }
    if name.ends_with(".jpg") {
        let image = turbojpeg::Image {
            pixels: pixels.as_slice(),
            width: w,
            pitch: w * 3,
            height: h,
            format: turbojpeg::PixelFormat::RGB,
        };
        turbojpeg::compress(image, 90, turbojpeg::Subsamp::Sub2x2).expect("encode").to_vec()
    } else {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, w as u32, h as u32);
        encoder.set_color(png::ColorType::Rgb);
        encoder.write_header().and_then(|mut writer| writer.write_image_data(&pixels)).expect("encode");
        out
    }
}

fn bench(c: &mut Criterion) {
    let options = DecodeOptions::default();
    for (name, bytes) in inputs() {
        let image = decode(&bytes, &options).expect("decodes");
        let mut group = c.benchmark_group("pipeline");
        group.sample_size(10);
        for &budget in BUDGETS {
            let processor = Preprocessor::new(
                ProcessorConfig::default()
                    .with_max_soft_tokens(Some(preprocess::SoftTokenBudget::new(budget).expect("budget"))),
            )
            .expect("config");
            group.bench_function(format!("{name}_{budget}"), |b| {
                b.iter(|| {
                    let image = decode(black_box(&bytes), &options).expect("decodes");
                    black_box(processor.gemma4_unified_image(&image).expect("input"))
                })
            });
        }
        group.finish();

        let mut group = c.benchmark_group("stages");
        group.sample_size(10);
        group.bench_function(format!("{name}_decode"), |b| {
            b.iter(|| black_box(decode(black_box(&bytes), &options).expect("decodes")))
        });
        for &budget in BUDGETS {
            let processor = Preprocessor::new(
                ProcessorConfig::default()
                    .with_max_soft_tokens(Some(preprocess::SoftTokenBudget::new(budget).expect("budget"))),
            )
            .expect("config");
            let (th, tw) = processor.target_size(image.height(), image.width()).expect("size");
            group.bench_function(format!("{name}_resize_{budget}"), |b| {
                b.iter(|| black_box(resize_bicubic(black_box(&image), tw, th).expect("resize")))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
