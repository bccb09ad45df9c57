//! The thread model at the encoder level: one `VisionEncoder` per checkpoint shared by many
//! threads, some encoding good images (bit-identical to one thread), others failing at the same
//! time — in the decoder and inside MLX, whose error handler is process-wide. Every failure
//! reaches its own caller only, with its own message; no success sees an error. Every entry
//! point (files, mlx-vlm's model inputs, the cache identity that reads the weights back) and
//! both executions (MLX's ops, the host kernels) serve many threads at once with one thread's
//! bits.

extern crate gemma_vision_encoder as vision;

mod common;

use common::{budget_of, bytes, fixture, image, load, temp_dir};
use std::sync::{Arc, Barrier};
use tensor::Array;
use vision::{CacheIdentity, EncoderOptions, Error, Kernels, MlxVlmModel, ModelInputs, PreparedImage, VisionEncoder};

const ROUNDS: usize = 6;

/// A gemma4 pixel input of 14×14: 3×3 patches of 4 (one pooling window), but its side is not
/// a multiple of the patch size, so MLX's reshape into patches fails.
fn mis_sized_pixels() -> PreparedImage {
    PreparedImage::Pixels(preprocess::PixelValues {
        data: vec![0.5; 3 * 14 * 14],
        height: 14,
        width: 14,
        soft_tokens: 1,
    })
}

fn assert_mlx_reshape_error(err: &Error) {
    match err {
        Error::Tensor(tensor::Error::Mlx { op, message, .. }) => {
            assert_eq!(*op, "reshape", "{err}");
            assert!(message.contains("reshape"), "MLX's own message: {message}");
        }
        other => panic!("expected MLX's reshape error, got {other:?}"),
    }
}

#[test]
fn concurrent_failures_stay_with_their_callers_and_successes_stay_bit_identical() {
    let clipped = Arc::new(load(&fixture("tiny-clipped").join("model")));
    let unified = Arc::new(load(&fixture("tiny-unified").join("model")));
    let clipped_images = vec![image("tiny-clipped", "noise-20x30.png"), image("tiny-clipped", "gradient-37x23.png")];
    let unified_images = vec![image("tiny-unified", "checker-20x30.png"), image("tiny-unified", "gradient-37x23.png")];
    let scratch = temp_dir("threads");
    let garbage = scratch.join("garbage.png");
    std::fs::write(&garbage, b"\x89PNG\r\n\x1a\nnot a png at all").unwrap();

    // One thread's results, computed first.
    let expected_clipped = bytes(&clipped.encode_files(&clipped_images, budget_of(6)).unwrap().features);
    let expected_unified = bytes(&unified.encode_files(&unified_images, budget_of(20)).unwrap().features);
    let mlx_error = clipped.encode(&[mis_sized_pixels()]).unwrap_err();
    assert_mlx_reshape_error(&mlx_error);
    let expected_message = mlx_error.to_string();

    // 6 threads start together: 2 encode gemma4, 2 gemma4_unified, 1 fails inside MLX, 1 in the decoder.
    let start = Arc::new(Barrier::new(6));
    let good = |encoder: &Arc<VisionEncoder>, images: &Vec<std::path::PathBuf>, budget: u32| {
        let (encoder, images, start) = (Arc::clone(encoder), images.clone(), Arc::clone(&start));
        std::thread::spawn(move || {
            start.wait();
            (0..ROUNDS)
                .map(|_| bytes(&encoder.encode_files(&images, budget_of(budget)).unwrap().features))
                .collect::<Vec<_>>()
        })
    };
    let good_threads = [
        (good(&clipped, &clipped_images, 6), &expected_clipped),
        (good(&clipped, &clipped_images, 6), &expected_clipped),
        (good(&unified, &unified_images, 20), &expected_unified),
        (good(&unified, &unified_images, 20), &expected_unified),
    ];
    let mlx_failures = {
        let (encoder, start) = (Arc::clone(&clipped), Arc::clone(&start));
        std::thread::spawn(move || {
            start.wait();
            (0..ROUNDS * 4).map(|_| encoder.encode(&[mis_sized_pixels()]).unwrap_err()).collect::<Vec<_>>()
        })
    };
    let decode_failures = {
        let (encoder, start, garbage) = (Arc::clone(&unified), Arc::clone(&start), garbage.clone());
        std::thread::spawn(move || {
            start.wait();
            (0..ROUNDS * 4).map(|_| encoder.encode_files(&[&garbage], None).unwrap_err()).collect::<Vec<_>>()
        })
    };

    for (handle, expected) in good_threads {
        for result in handle.join().unwrap() {
            assert_eq!(&result, expected, "a concurrent encode differs from the single-threaded one");
        }
    }
    for err in mlx_failures.join().unwrap() {
        assert_mlx_reshape_error(&err);
        // Same op, same MLX message: nothing from another thread's failure leaked in.
        let message = err.to_string();
        assert_eq!(message, expected_message);
    }
    for err in decode_failures.join().unwrap() {
        assert!(err.to_string().starts_with(&format!("{}: malformed PNG data", garbage.display())), "{err}");
    }
    // And afterwards, on this thread, the encoders work as before.
    assert_eq!(bytes(&clipped.encode_files(&clipped_images, budget_of(6)).unwrap().features), expected_clipped);
}

/// One thread's results of every entry point of `encoder`: the features of `files`, of the
/// same images as mlx-vlm's stacked `pixel_values` (built on the calling thread: an `Array`
/// stays on its thread), and the cache identity.
fn every_entry(
    encoder: &VisionEncoder,
    files: &[std::path::PathBuf],
    prepared: &[PreparedImage],
) -> (Vec<u8>, Vec<u8>, String) {
    let from_files = bytes(&encoder.encode_files(files, budget_of(6)).unwrap().features);
    let pixels: Vec<Array> = prepared
        .iter()
        .map(|image| {
            let PreparedImage::Pixels(p) = image else { panic!("gemma4 takes pixels") };
            Array::from_slice(&p.data, &[1, 3, p.height as i32, p.width as i32]).unwrap()
        })
        .collect();
    let batch = Array::concatenate(&pixels.iter().collect::<Vec<_>>(), 0).unwrap();
    let inputs = ModelInputs::pixels(batch).unwrap();
    let from_inputs = bytes(&encoder.encode_model_inputs(&inputs).unwrap().features);
    (from_files, from_inputs, encoder.cache_identity().unwrap())
}

#[test]
fn every_entry_point_of_one_encoder_serves_many_threads_at_once_with_one_threads_bits() {
    let model = fixture("tiny-clipped").join("model");
    let files = vec![image("tiny-clipped", "noise-20x30.png"), image("tiny-clipped", "checker-20x30.png")];
    for kernels in [Kernels::Mlx, Kernels::Host] {
        let encoder = Arc::new(VisionEncoder::load(&model, EncoderOptions { kernels, ..Default::default() }).unwrap());
        let preprocessor = encoder.preprocessor(budget_of(6)).unwrap();
        let prepared: Arc<Vec<PreparedImage>> = Arc::new(
            files
                .iter()
                .map(|path| {
                    encoder.prepare(&preprocess::open(path, &Default::default()).unwrap(), &preprocessor).unwrap()
                })
                .collect(),
        );
        // The first identity reads every weight back while the other threads compute on them:
        // computed on a second encoder here, so that the shared one's first read is concurrent.
        let expected = {
            let alone = VisionEncoder::load(&model, EncoderOptions { kernels, ..Default::default() }).unwrap();
            every_entry(&alone, &files, &prepared)
        };
        assert_eq!(expected.0, expected.1, "{kernels:?}: model inputs and files give the same bits");
        let start = Arc::new(Barrier::new(6));
        let handles: Vec<_> = (0..6)
            .map(|_| {
                let (encoder, files, prepared, start) =
                    (Arc::clone(&encoder), files.clone(), Arc::clone(&prepared), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    (0..ROUNDS).map(|_| every_entry(&encoder, &files, &prepared)).collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            for result in handle.join().unwrap() {
                assert_eq!(result, expected, "{kernels:?}: a concurrent result differs from one thread's");
            }
        }
    }
}
