//! The gemma4_unified vision embedder: mlx-vlm's `VisionEmbedder` followed by `embed_vision`.

use crate::multimodal_embedder::MultimodalEmbedder;
use crate::patch_rows::{keep_leading_rows, patch_rows, patch_rows_alone};
use crate::trace::{Trace, record};
use crate::{Error, Result, UnifiedConfig};
use layers::{LAYER_NORM_EPS, LayerNorm, Projection, Weights};
use tensor::{Array, Dtype, SharedArray};

/// The encoder-free embedder of gemma4_unified (12B): each 48×48 patch → one soft token.
///
/// `Model.get_image_features` as mlx-vlm runs it, for patches `x` `[B, N, 6912]` float32 and
/// positions `[B, N, 2]` (x, y; padding rows `(-1, -1)`):
///
/// ```text
/// h = layer_norm(x, ln1)                  # eps 1e-5 (MLX's default), not rms_norm_eps
/// h = addmm(dense.b, h, dense.W.T)      # quantized: quantized_matmul(h, …) + dense.b
/// h = layer_norm(h, ln2)
/// cl = maximum(ids, 0).astype(i32); val = (ids != -1).astype(h.dtype)
/// h = h + (pos[cl[..., 0], 0] * val[..., 0:1] + pos[cl[..., 1], 1] * val[..., 1:2])
/// h = layer_norm(h, pos_norm)
/// f = embed_vision(h)                     # rms_norm(h, None, eps) @ W.T
/// ```
///
/// then keeps, per batch row, the first `count(non-padding)` rows, concatenated `[Σ, T]`
/// (rows of empty images dropped). With float32 patches and bf16 weights every step promotes
/// to float32, so the features are float32. Weights: `vision_embedder.*` (`patch_ln1`,
/// `patch_dense`, `patch_ln2`, `pos_embedding` `[S, 2, E]`, `pos_norm`) and `embed_vision.*`.
#[derive(Debug, Clone)]
pub struct UnifiedVisionEmbedder {
    config: UnifiedConfig,
    patch_ln1: LayerNorm,
    patch_dense: Projection,
    patch_ln2: LayerNorm,
    pos_embedding: SharedArray,
    pos_norm: LayerNorm,
    embedder: MultimodalEmbedder,
}

impl UnifiedVisionEmbedder {
    /// Loads the embedder from `weights` (the whole checkpoint view: keys `vision_embedder.*`,
    /// `embed_vision.*`); its norms and products computed by the view's execution (the position
    /// gathers are MLX ops).
    pub fn load(weights: &Weights, config: &UnifiedConfig, text_hidden: i32) -> Result<UnifiedVisionEmbedder> {
        let w = weights.pp("vision_embedder");
        let (patch_dim, e) = (config.patch_dim(), config.mm_embed_dim);
        Ok(UnifiedVisionEmbedder {
            config: config.clone(),
            patch_ln1: LayerNorm::load(&w.pp("patch_ln1"), patch_dim, LAYER_NORM_EPS)?,
            patch_dense: Projection::load(&w.pp("patch_dense"), patch_dim, e, true)?,
            patch_ln2: LayerNorm::load(&w.pp("patch_ln2"), e, LAYER_NORM_EPS)?,
            pos_embedding: w.get("pos_embedding", &[config.mm_posemb_size, 2, e])?,
            pos_norm: LayerNorm::load(&w.pp("pos_norm"), e, LAYER_NORM_EPS)?,
            embedder: MultimodalEmbedder::load(
                &weights.pp("embed_vision"),
                config.output_proj_dims,
                text_hidden,
                config.rms_norm_eps as f32,
            )?,
        })
    }

    /// The configuration the embedder was loaded with.
    pub fn config(&self) -> &UnifiedConfig {
        &self.config
    }

    /// The float weights' dtype (the position table's).
    pub fn dtype(&self) -> Dtype {
        self.pos_embedding.dtype()
    }

    /// `get_image_features(patches, positions)`: patches `[B, N, 6912]` float32 (or
    /// `[V, T, N, 6912]` video frames, flattened to `V·T` frames as `get_video_features` does)
    /// and positions `[…, 2]` → features `[Σ real rows, T]`, the real rows (not `(-1, -1)`) of
    /// each frame kept from the start. Without positions (`get_image_features(patches)`, as
    /// mlx-vlm's vision cache calls it): no position term and every row kept, `[B·N, T]`.
    pub fn encode_patches(
        &self,
        patches: &Array,
        positions: Option<&Array>,
        mut trace: Option<&mut Trace>,
    ) -> Result<Array> {
        let patch_dim = self.config.patch_dim();
        let (patches, positions) = match positions {
            Some(positions) => {
                let (patches, positions) = patch_rows(patches, positions, patch_dim)?;
                (patches, Some(positions))
            }
            None => (patch_rows_alone(patches, patch_dim)?, None),
        };
        if patches.dtype() != Dtype::F32 {
            return Err(Error::ModelInput {
                input: "patches",
                expected: "float32".into(),
                found: patches.dtype().to_string(),
            });
        }
        let counts = positions.as_ref().map(|p| self.real_rows(p)).transpose()?;
        let h = self.patch_ln1.forward(&patches)?;
        record(&mut trace, "patch_ln1", &h);
        let h = self.patch_dense.forward(&h)?;
        record(&mut trace, "patch_dense", &h);
        let h = self.patch_ln2.forward(&h)?;
        record(&mut trace, "patch_ln2", &h);
        let h = match &positions {
            Some(positions) => h.add(&self.position_term(positions, h.dtype())?)?,
            None => h,
        };
        record(&mut trace, "positions_added", &h);
        let h = self.pos_norm.forward(&h)?;
        record(&mut trace, "pos_norm", &h);
        let projected = self.embedder.forward(&h)?;
        let out = match counts {
            Some(counts) => keep_leading_rows(&projected, &counts)?,
            None => projected.reshape(&[-1, projected.dim(-1)?])?,
        };
        record(&mut trace, "features", &out);
        Ok(out)
    }

    /// The rows [`encode_patches`](Self::encode_patches) keeps of each frame of `positions`
    /// (`[B, N, 2]`, or `[V, T, N, 2]`), in order: its real rows.
    pub fn kept_rows(&self, positions: &Array) -> Result<Vec<usize>> {
        let n = positions.dim(-2)?;
        self.real_rows(&positions.reshape(&[-1, n, 2])?)
    }

    /// Per batch row, the rows that are not padding (both ids `-1`), read from the host values
    /// of `positions` `[B, N, 2]`. Every id must be `-1` (padding) or index a row of the
    /// position table: MLX's gather does not check bounds, so an id past the table would read
    /// outside it.
    fn real_rows(&self, positions: &Array) -> Result<Vec<usize>> {
        let size = i64::from(self.config.mm_posemb_size);
        let ids = positions.astype(Dtype::I64)?.to_vec::<i64>()?;
        if let Some(id) = ids.iter().find(|&&id| id < -1 || id >= size) {
            return Err(Error::input(format!(
                "position id {id} is outside the position table (valid: -1 for padding, 0..{size})"
            )));
        }
        let n = positions.dim(1)? as usize;
        Ok(ids.chunks_exact(2 * n.max(1)).map(|row| row.chunks_exact(2).filter(|p| p != &[-1, -1]).count()).collect())
    }

    /// `pos[cl[..., 0], 0] * val[..., 0:1] + pos[cl[..., 1], 1] * val[..., 1:2]`, `[B, N, E]`.
    fn position_term(&self, positions: &Array, dtype: Dtype) -> Result<Array> {
        let shape = positions.shape();
        let (b, n) = (shape[0], shape[1]);
        let e = self.config.mm_embed_dim;
        let clamped = positions.maximum(0)?.astype(Dtype::I32)?;
        let valid = positions.ne(-1)?.astype(dtype)?;
        // Axis 0 looks up the x (column) table, axis 1 the y (row) table.
        let term = |axis: i32| -> Result<Array> {
            let ids = clamped.slice_axis(-1, axis, axis + 1)?.reshape(&[b * n])?;
            let table = self.pos_embedding.slice_axis(1, axis, axis + 1)?.squeeze(&[1])?;
            let rows = table.take(&ids, 0)?.reshape(&[b, n, e])?;
            Ok(rows.mul(&valid.slice_axis(-1, axis, axis + 1)?)?)
        };
        Ok(term(0)?.add(&term(1)?)?)
    }
}
