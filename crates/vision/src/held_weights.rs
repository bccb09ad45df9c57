//! [`HeldTensor`]: vision weights another runtime holds (mlx-vlm's loaded model), and the checks
//! that they are the checkpoint's an encoder computes with.

use crate::{Checkpoint, ComputeDtype, Error, Result, VisionEncoder};
use layers::WeightStore;
use std::collections::BTreeSet;
use tensor::Dtype;

/// One vision tensor as another runtime holds it (a parameter of mlx-vlm's model), under its
/// sanitized name (`vision_tower.…`, `vision_embedder.…`, `embed_vision.…`, as the encoder's
/// [`used_keys`](VisionEncoder::used_keys) name them).
pub trait HeldTensor {
    /// The sanitized name.
    fn name(&self) -> &str;
    /// The dtype it is held in.
    fn dtype(&self) -> Dtype;
    /// Its shape (`[]` for a 0-d scalar).
    fn shape(&self) -> &[i32];
    /// Whether its bytes, row-major, are exactly `bytes`.
    fn bytes_equal(&self, bytes: &[u8]) -> bool;
}

/// How a held tensor's dtype relates to the stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DtypeFit {
    /// The stored dtype.
    Stored,
    /// A floating tensor held as float32 (the model cast with `set_dtype(mx.float32)`).
    CastToF32,
    /// The stored dtype, which is float32 or not floating: either compute dtype fits.
    Both,
    /// Neither.
    Neither,
}

fn fit(stored: Dtype, held: Dtype) -> DtypeFit {
    match (held == stored, stored.is_float() && held == Dtype::F32) {
        (true, true) => DtypeFit::Both,
        (true, false) if !stored.is_float() => DtypeFit::Both,
        (true, false) => DtypeFit::Stored,
        (false, true) => DtypeFit::CastToF32,
        (false, false) => DtypeFit::Neither,
    }
}

impl Checkpoint {
    /// The compute dtype that serves `held` from this checkpoint: [`ComputeDtype::Native`] when
    /// every held tensor has its stored dtype, [`ComputeDtype::F32`] when every floating one is
    /// held as float32 (a model cast with `set_dtype(mx.float32)`: floating parameters only) and
    /// every other has its stored dtype. Reads only the checkpoint's tensor headers.
    ///
    /// Fails with [`Error::WeightsDiffer`] naming a held tensor the checkpoint does not store,
    /// one whose dtype fits neither, or, for a model cast only in part, one left uncast.
    pub fn held_compute_dtype(&self, held: &[impl HeldTensor]) -> Result<ComputeDtype> {
        let store = self.store();
        let mut fits = Vec::with_capacity(held.len());
        for tensor in held {
            let stored = match store.info(tensor.name()).map(|info| info.dtype) {
                Ok(Ok(dtype)) => dtype,
                Ok(Err(unknown)) => {
                    return Err(differ(tensor.name(), format!("the checkpoint stores it as {unknown}")));
                }
                Err(_) => return Err(differ(tensor.name(), "the checkpoint stores no such vision tensor")),
            };
            match fit(stored, tensor.dtype()) {
                DtypeFit::Neither => {
                    let detail = format!("it is {}, the checkpoint stores {stored}", tensor.dtype());
                    return Err(differ(tensor.name(), detail));
                }
                other => fits.push((tensor.name(), other)),
            }
        }
        if fits.iter().all(|(_, f)| matches!(f, DtypeFit::Stored | DtypeFit::Both)) {
            return Ok(ComputeDtype::Native);
        }
        match fits.iter().find(|(_, f)| *f == DtypeFit::Stored) {
            None => Ok(ComputeDtype::F32),
            Some((name, _)) => Err(differ(
                name,
                "other vision weights are cast to float32 and this one is not: a model is served as stored or cast \
                 to float32 as a whole",
            )),
        }
    }
}

/// [`MlxVlmModel::check_held_weights`](crate::MlxVlmModel::check_held_weights).
pub(crate) fn check_held_weights(encoder: &VisionEncoder, held: &[impl HeldTensor]) -> Result<()> {
    let ours: BTreeSet<&str> = encoder.used_keys().iter().map(String::as_str).collect();
    let theirs: BTreeSet<&str> = held.iter().map(HeldTensor::name).collect();
    if let Some(name) = ours.difference(&theirs).next() {
        return Err(differ(name, "the encoder reads it and the model holds no such parameter"));
    }
    if let Some(name) = theirs.difference(&ours).next() {
        return Err(differ(name, "the model holds it and the checkpoint's encoder reads no such tensor"));
    }
    let store = encoder.checkpoint().store();
    for tensor in held {
        let stored = store.load(tensor.name())?;
        let expected = match encoder.options().compute_dtype {
            ComputeDtype::F32 if stored.dtype().is_float() && stored.dtype() != Dtype::F32 => {
                stored.astype(Dtype::F32)?
            }
            _ => stored,
        };
        if tensor.dtype() != expected.dtype() {
            let detail = format!("it is {}, the encoder's is {}", tensor.dtype(), expected.dtype());
            return Err(differ(tensor.name(), detail));
        }
        if tensor.shape() != expected.shape().as_slice() {
            let detail = format!("its shape is {:?}, the checkpoint's {:?}", tensor.shape(), expected.shape());
            return Err(differ(tensor.name(), detail));
        }
        if !expected.with_bytes(|bytes| tensor.bytes_equal(bytes))? {
            return Err(differ(tensor.name(), "its values differ (same dtype and shape)"));
        }
    }
    Ok(())
}

fn differ(name: &str, detail: impl Into<String>) -> Error {
    Error::WeightsDiffer { name: name.to_owned(), detail: detail.into() }
}
