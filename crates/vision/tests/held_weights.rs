//! [`HeldTensor`]: weights held elsewhere (as mlx-vlm's model holds them) are accepted when they
//! are the checkpoint's, as stored or cast to float32 as a whole, and refused, naming the
//! tensor, when anything differs.

extern crate gemma_vision_encoder as vision;

mod common;

use common::{fixture, load};
use layers::WeightStore;
use tensor::{Array, Dtype};
use vision::{ComputeDtype, EncoderOptions, Error, HeldTensor, MlxVlmModel, VisionEncoder};

/// A tensor held by another runtime, with its bytes.
#[derive(Debug, Clone)]
struct Held {
    name: String,
    dtype: Dtype,
    shape: Vec<i32>,
    bytes: Vec<u8>,
}

impl Held {
    fn of(name: &str, array: &Array) -> Held {
        Held {
            name: name.to_owned(),
            dtype: array.dtype(),
            shape: array.shape(),
            bytes: array.with_bytes(<[u8]>::to_vec).unwrap(),
        }
    }
}

impl HeldTensor for Held {
    fn name(&self) -> &str {
        &self.name
    }
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[i32] {
        &self.shape
    }
    fn bytes_equal(&self, bytes: &[u8]) -> bool {
        self.bytes == bytes
    }
}

/// The checkpoint's vision tensors as a model loaded from it holds them; with `cast`, every
/// floating one cast to float32 (`model.set_dtype(mx.float32)`).
fn held(encoder: &VisionEncoder, cast: impl Fn(&str) -> bool) -> Vec<Held> {
    let store = encoder.checkpoint().store();
    encoder
        .used_keys()
        .iter()
        .map(|key| {
            let stored = store.load(key).unwrap();
            let array =
                if cast(key) && stored.dtype().is_float() { stored.astype(Dtype::F32).unwrap() } else { stored };
            Held::of(key, &array)
        })
        .collect()
}

fn differ(result: vision::Result<impl std::fmt::Debug>) -> (String, String) {
    match result {
        Err(Error::WeightsDiffer { name, detail }) => (name, detail),
        other => panic!("expected the weights to differ, got {other:?}"),
    }
}

#[test]
fn the_checkpoints_own_weights_are_accepted_as_stored_or_cast_to_float32() {
    for case in ["tiny-clipped", "tiny-unified", "tiny-f32", "q-mxfp4", "q-unified-affine8"] {
        let dir = fixture(case).join("model");
        let native = load(&dir);
        let as_stored = held(&native, |_| false);
        assert_eq!(native.checkpoint().held_compute_dtype(&as_stored).unwrap(), ComputeDtype::Native);
        native.check_held_weights(&as_stored).unwrap();

        let cast = held(&native, |_| true);
        let expected = if case == "tiny-f32" { ComputeDtype::Native } else { ComputeDtype::F32 };
        assert_eq!(native.checkpoint().held_compute_dtype(&cast).unwrap(), expected, "{case}");
        let options = EncoderOptions { compute_dtype: ComputeDtype::F32, ..Default::default() };
        VisionEncoder::load(&dir, options).unwrap().check_held_weights(&cast).unwrap();
        if case != "tiny-f32" {
            let (_, detail) = differ(native.check_held_weights(&cast));
            assert!(detail.contains("it is float32, the encoder's is"), "{case}: {detail}");
        }
    }
}

#[test]
fn other_weights_are_refused_naming_the_tensor() {
    let encoder = load(&fixture("tiny-clipped").join("model"));
    let exact = held(&encoder, |_| false);
    let projector = "embed_vision.embedding_projection.weight";

    let mut changed = exact.clone();
    let tensor = changed.iter_mut().find(|h| h.name == projector).unwrap();
    tensor.bytes[0] ^= 1;
    assert_eq!(
        differ(encoder.check_held_weights(&changed)),
        (projector.into(), "its values differ (same dtype and shape)".into())
    );

    let mut reshaped = exact.clone();
    reshaped.iter_mut().find(|h| h.name == projector).unwrap().shape.reverse();
    assert!(differ(encoder.check_held_weights(&reshaped)).1.contains("shape"));

    let missing: Vec<Held> = exact.iter().filter(|h| h.name != projector).cloned().collect();
    let (name, detail) = differ(encoder.check_held_weights(&missing));
    assert_eq!(name, projector);
    assert!(detail.contains("the model holds no such parameter"), "{detail}");

    let mut extra = exact.clone();
    extra.push(Held { name: "vision_tower.lora_a".into(), ..exact[0].clone() });
    let (name, detail) = differ(encoder.check_held_weights(&extra));
    assert_eq!(name, "vision_tower.lora_a");
    assert!(detail.contains("reads no such tensor"), "{detail}");
    let (name, _) = differ(encoder.checkpoint().held_compute_dtype(&extra));
    assert_eq!(name, "vision_tower.lora_a");

    // A dtype that is neither the stored one nor float32, and a model cast only in part.
    let mut half = exact.clone();
    half[0].dtype = Dtype::F16;
    let (name, detail) = differ(encoder.checkpoint().held_compute_dtype(&half));
    assert_eq!(
        (name.as_str(), detail.contains("it is float16, the checkpoint stores bfloat16")),
        (exact[0].name.as_str(), true)
    );
    let partly = held(&encoder, |key| key != projector);
    let (name, detail) = differ(encoder.checkpoint().held_compute_dtype(&partly));
    assert_eq!(name, projector);
    assert!(detail.contains("as a whole"), "{detail}");
}
