//! [`MlxVlmModel`]: a [`VisionEncoder`] serving in place of mlx-vlm's loaded model, from what
//! mlx-vlm holds: its processor's pixel inputs and its model's weights.

use crate::{Features, HeldTensor, ModelInputs, Result, VisionEncoder, held_weights, model_inputs};

/// What mlx-vlm's integration asks of an encoder (the `gemma_vision` package's generate and
/// server adapters): the features mlx-vlm's model computes from its processor's inputs, and the
/// proof that the model's weights are the ones the encoder computes with.
pub trait MlxVlmModel {
    /// What mlx-vlm's model computes from its processor's pixel inputs: gemma4
    /// `Model.encode_image(pixel_values, position_ids)` (its vision tower, then
    /// `embed_vision`; the same function encodes `pixel_values_videos`), gemma4_unified
    /// `Model.get_image_features` (or `get_video_features` for `[V, T, N, D]` frames).
    /// `features` is `[Σ rows, text_hidden]` (gemma4's `[1, Σ, text_hidden]` without its
    /// leading axis: see [`Family::model_features_have_batch_axis`](crate::Family::model_features_have_batch_axis)),
    /// bit for bit, in the dtype mlx-vlm returns; `soft_tokens` counts the rows of each image
    /// or frame in order (each batch row's `N` for unified patches without ids).
    ///
    /// Fails with [`Error::ModelInput`](crate::Error::ModelInput) on inputs of the other family
    /// or of the wrong patch width, and with [`Error::TooLarge`](crate::Error::TooLarge) before
    /// a batch whose attention would not fit.
    fn encode_model_inputs(&self, inputs: &ModelInputs) -> Result<Features>;

    /// Checks that `held` are exactly the vision tensors this encoder computes with: the names
    /// of [`used_keys`](VisionEncoder::used_keys), each of the dtype, shape and bytes of the
    /// encoder's weight (the stored tensor, cast to float32 when floating under
    /// [`ComputeDtype::F32`](crate::ComputeDtype::F32), as the encoder casts it at load). Fails
    /// with [`Error::WeightsDiffer`](crate::Error::WeightsDiffer) naming the first tensor missing
    /// on either side or differing, and how. Which compute dtype serves a held model is
    /// [`Checkpoint::held_compute_dtype`](crate::Checkpoint::held_compute_dtype).
    fn check_held_weights(&self, held: &[impl HeldTensor]) -> Result<()>;
}

impl MlxVlmModel for VisionEncoder {
    fn encode_model_inputs(&self, inputs: &ModelInputs) -> Result<Features> {
        model_inputs::encode_model_inputs(self, inputs)
    }

    fn check_held_weights(&self, held: &[impl HeldTensor]) -> Result<()> {
        held_weights::check_held_weights(self, held)
    }
}
