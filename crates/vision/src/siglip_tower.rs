//! The gemma4 vision encoder: mlx-vlm's `VisionModel` followed by `embed_vision`.

use crate::multimodal_embedder::MultimodalEmbedder;
use crate::patch_embedder::PatchEmbedder;
use crate::patch_rows::{keep_leading_rows, patch_rows};
use crate::pooler::Pooler;
use crate::trace::{Trace, record};
use crate::{Error, Result, SiglipConfig};
use layers::{VisionBlock, VisionBlockConfig, Weights};
use tensor::{Array, Dtype, SharedArray};

/// Pooled soft tokens of a batch, before `embed_vision`.
#[derive(Debug)]
pub struct PooledRows {
    /// `[Σ counts, D]`: each image's valid pooled slots, images in batch order.
    pub rows: Array,
    /// Rows per image (the reference's `count(valid slots)`).
    pub counts: Vec<usize>,
}

/// The SigLIP-style vision tower of gemma4 (e2b, e4b, 26B-A4B, 31B) with its multimodal
/// embedder: images → soft tokens in the language model's space.
///
/// Stages, as mlx-vlm's `Model.encode_image` runs them: patch embedding (+ position tables),
/// `num_hidden_layers` [`VisionBlock`]s with an additive `[B, 1, L, L]` mask (0 between real
/// patches, -1e4 to or from padding, in the hidden dtype) and 2-D RoPE over the patch grid,
/// position pooling (`k × k` average, × √hidden), the first `count(valid slots)` rows of each
/// image, optional `standardize` (`(x − std_bias) · std_scale`), and the
/// [`MultimodalEmbedder`]. Weights: `vision_tower.*` and `embed_vision.*`.
#[derive(Debug, Clone)]
pub struct SiglipVisionTower {
    config: SiglipConfig,
    block_config: VisionBlockConfig,
    patch_embedder: PatchEmbedder,
    blocks: Vec<VisionBlock>,
    pooler: Pooler,
    standardize: Option<(SharedArray, SharedArray)>,
    embedder: MultimodalEmbedder,
}

impl SiglipVisionTower {
    /// Loads the tower from `weights` (the whole checkpoint view: keys `vision_tower.*`,
    /// `embed_vision.*`), every stage computed by the view's execution. `text_hidden` is the
    /// language model's width.
    pub fn load(weights: &Weights, config: &SiglipConfig, text_hidden: i32) -> Result<SiglipVisionTower> {
        let tower = weights.pp("vision_tower");
        let d = config.hidden_size;
        let block_config = VisionBlockConfig {
            hidden_size: d,
            intermediate_size: config.intermediate_size,
            num_heads: config.num_attention_heads,
            num_kv_heads: config.num_key_value_heads,
            head_dim: config.head_dim,
            rms_norm_eps: config.rms_norm_eps,
            rope_theta: config.rope_parameters.rope_theta,
            clipped_linears: config.use_clipped_linears,
        };
        block_config.validate()?;
        let patch_embedder =
            PatchEmbedder::load(&tower.pp("patch_embedder"), d, config.patch_size, config.position_embedding_size)?;
        let blocks = (0..config.num_hidden_layers)
            .map(|i| VisionBlock::load(&tower.pp(format!("encoder.layers.{i}")), &block_config))
            .collect::<layers::Result<Vec<_>>>()?;
        let standardize =
            if config.standardize { Some((tower.get("std_bias", &[d])?, tower.get("std_scale", &[d])?)) } else { None };
        let embedder =
            MultimodalEmbedder::load(&weights.pp("embed_vision"), d, text_hidden, config.rms_norm_eps as f32)?;
        Ok(SiglipVisionTower {
            config: config.clone(),
            block_config,
            patch_embedder,
            blocks,
            pooler: Pooler::new(d, weights.execution()),
            standardize,
            embedder,
        })
    }

    /// The configuration the tower was loaded with.
    pub fn config(&self) -> &SiglipConfig {
        &self.config
    }

    /// The side of a patch in pixels (checked positive at load).
    pub fn patch_size(&self) -> i32 {
        self.patch_embedder.patch_size()
    }

    /// The dtype of the hidden states (the patch projection's weight dtype).
    pub fn dtype(&self) -> Dtype {
        self.patch_embedder.dtype()
    }

    /// `embed_vision`: pooled (and standardized) soft tokens `[N, D]` → features
    /// `[N, text_hidden]`. Row-wise, so the rows of several calls may be concatenated first (as
    /// the reference does for a list of images of different sizes); the trace records the rows
    /// as `standardized` when the tower standardizes (the reference's vision tower output).
    pub fn project(&self, rows: &Array, mut trace: Option<&mut Trace>) -> Result<Array> {
        if self.standardize.is_some() {
            record(&mut trace, "standardized", rows);
        }
        let out = self.embedder.forward(rows)?;
        record(&mut trace, "features", &out);
        Ok(out)
    }

    /// Image path of the tower (`VisionModel.__call__` on a `[B, 3, H, W]` batch): the pooled,
    /// standardized soft tokens `[B · n, D]` before `embed_vision`. Positions are the row-major
    /// patch grid `(col, row)`; nothing is padded.
    pub fn pool_pixels(&self, pixels: &Array, mut trace: Option<&mut Trace>) -> Result<PooledRows> {
        let shape = pixels.shape();
        let &[batch, 3, h, w] = shape.as_slice() else {
            return Err(Error::ModelInput {
                input: "pixel_values",
                expected: "[B, 3, H, W]".into(),
                found: format!("{shape:?}"),
            });
        };
        if pixels.dtype() != Dtype::F32 {
            return Err(Error::ModelInput {
                input: "pixel_values",
                expected: "float32".into(),
                found: pixels.dtype().to_string(),
            });
        }
        let p = self.config.patch_size;
        let (ph, pw) = (h / p, w / p);
        if ph == 0 || pw == 0 {
            return Err(Error::input(format!("an image of {h}×{w} pixels holds no {p}×{p} patch")));
        }
        let num_real = ph * pw;
        let output_length = num_real / self.pool_area()?;
        if output_length == 0 {
            return Err(Error::input(format!("{num_real} patches are fewer than one pooling window")));
        }
        let grid: Vec<i64> = (0..batch)
            .flat_map(|_| (0..ph).flat_map(move |row| (0..pw).flat_map(move |col| [i64::from(col), i64::from(row)])))
            .collect();
        let positions = Array::from_slice(&grid, &[batch, num_real, 2])?.astype(Dtype::I32)?;
        let padding = Array::zeros(&[batch, num_real], Dtype::Bool)?;
        let embeddings = self.patch_embedder.embed_pixels(pixels, &positions, &padding)?;
        record(&mut trace, "patch_embeddings", &embeddings);
        self.pool_embeddings(embeddings, (&positions, &grid), &padding, output_length, trace)
    }

    /// Position-id path of the tower (videos, pre-patchified input): `patches` `[B, L, 3·p²]`
    /// float32 (`[p, p, C]` order, values in [0, 1]) and `positions` `[B, L, 2]` integer (x, y),
    /// padding rows marked `(-1, -1)`; 4-D `[B, T, L, …]` inputs are flattened to `B·T` frames.
    /// Output: the pooled soft tokens of each frame's valid slots, concatenated, `[Σ, D]`.
    pub fn pool_patches(
        &self,
        patches: &Array,
        positions: &Array,
        mut trace: Option<&mut Trace>,
    ) -> Result<PooledRows> {
        let patch_dim = 3 * self.config.patch_size * self.config.patch_size;
        let (patches, positions) = patch_rows(patches, positions, patch_dim)?;
        if patches.dtype() != Dtype::F32 {
            return Err(Error::ModelInput {
                input: "patches",
                expected: "float32".into(),
                found: patches.dtype().to_string(),
            });
        }
        let padding = positions.eq(-1)?.all(&[-1], false)?;
        let host_positions = positions.astype(Dtype::I64)?.to_vec::<i64>()?;
        let output_length = patches.dim(1)? / self.pool_area()?;
        if output_length == 0 {
            return Err(Error::input(format!("{} patches are fewer than one pooling window", patches.dim(1)?)));
        }
        let embeddings = self.patch_embedder.embed_patches(&patches, &positions, &padding)?;
        record(&mut trace, "patch_embeddings", &embeddings);
        self.pool_embeddings(embeddings, (&positions, &host_positions), &padding, output_length, trace)
    }

    /// Refuses a batch of `batch` images of `patches` patches each whose attention cannot fit in
    /// memory, before anything is allocated: every layer attends over all patches of an image,
    /// with the additive mask `[B, 1, L, L]` (bool, then the hidden dtype) and the scores
    /// `[B, H, L, L]` in the hidden dtype, which MLX's CPU attention materialises. Their sum,
    /// `B · L² · (1 + s + H · s)` bytes for an `s`-byte hidden dtype, must not exceed
    /// [`tensor::memory::max_array_bytes`]; otherwise [`Error::TooLarge`] with `what()` naming
    /// the input.
    pub fn check_attention(&self, batch: usize, patches: usize, what: impl FnOnce() -> String) -> Result<()> {
        let (bytes, limit) = (self.attention_bytes(batch as u128, patches as u128), tensor::memory::max_array_bytes());
        if bytes > limit as u128 {
            return Err(Error::TooLarge { what: what(), bytes, limit });
        }
        Ok(())
    }

    /// `B · L² · (1 + s + H · s)`: the bytes of the mask and scores of [`check_attention`](Self::check_attention)
    /// for `batch` images of `patches` patches (saturating).
    pub(crate) fn attention_bytes(&self, batch: u128, patches: u128) -> u128 {
        let size = self.dtype().size() as u128;
        let heads = self.block_config.num_heads as u128;
        batch.saturating_mul(patches.saturating_mul(patches)).saturating_mul(1 + size + heads * size)
    }

    /// `pooling_kernel_size²`; an error for a hand-built config whose kernel is not positive
    /// (configs read from files are validated before a tower exists).
    fn pool_area(&self) -> Result<i32> {
        let k = self.config.pooling_kernel_size;
        k.checked_mul(k).filter(|_| k > 0).ok_or_else(|| {
            Error::input(format!("pooling_kernel_size {k} must be positive and its square must fit in 32 bits"))
        })
    }

    /// From patch embeddings `[B, L, D]` to pooled soft tokens `[Σ, D]`, per
    /// `VisionModel.__call__` after the patch embedder. `positions` comes twice: as the array
    /// the graph uses and as its host values (`[B, L, 2]` row-major), from which the rows to
    /// keep are counted without evaluating anything.
    fn pool_embeddings(
        &self,
        embeddings: Array,
        (positions, host_positions): (&Array, &[i64]),
        padding: &Array,
        output_length: i32,
        mut trace: Option<&mut Trace>,
    ) -> Result<PooledRows> {
        let dtype = embeddings.dtype();
        let mask = attention_mask(padding, dtype)?;
        let rope = self.block_config.rope_tables(positions, dtype)?;
        let mut hidden = embeddings;
        for (i, block) in self.blocks.iter().enumerate() {
            hidden = block.forward(&hidden, &rope, Some(&mask))?;
            record(&mut trace, format!("block_{i:02}"), &hidden);
        }
        let pooled = self.pooler.forward(&hidden, positions, padding, output_length)?;
        record(&mut trace, "pooled", &pooled);
        let counts = Pooler::valid_counts(host_positions, padding.dim(0)? as usize, output_length as usize);
        let mut rows = keep_leading_rows(&pooled, &counts)?;
        if let Some((bias, scale)) = &self.standardize {
            rows = rows.sub(bias)?.mul(scale)?;
        }
        Ok(PooledRows { rows, counts })
    }
}

/// `VisionModel`'s attention mask: `valid = !padding`, `m = valid[:, None, :] * valid[:, :, None]`,
/// `where(m, 0.0, -1e4)` with both constants in `dtype`, expanded to `[B, 1, L, L]`.
fn attention_mask(padding: &Array, dtype: Dtype) -> Result<Array> {
    let valid = padding.logical_not()?;
    let pairs = valid.expand_dims(1)?.mul(&valid.expand_dims(2)?)?;
    let zero = Array::scalar(0.0f32)?.astype(dtype)?;
    let fill = Array::scalar(-1e4f32)?.astype(dtype)?;
    Ok(pairs.select(&zero, &fill)?.expand_dims(1)?)
}
