//! The gemma4 vision tower's patch embedder (mlx-vlm `VisionPatchEmbedder`).

use crate::Result;
use layers::{Linear, Weights};
use tensor::{Array, SharedArray};

/// Patches → hidden states: `input_proj(2·(patches − 0.5))` plus a learned position embedding
/// per patch, looked up by the patch's (column, row) in two tables.
///
/// Weights (below `vision_tower.patch_embedder`): `input_proj.weight` `[D, 3·p²]` and
/// `position_embedding_table` `[2, P, D]` (axis 0: the x table, then the y table).
#[derive(Debug, Clone)]
pub struct PatchEmbedder {
    input_proj: Linear,
    position_table: SharedArray,
    patch_size: i32,
    table_size: i32,
}

impl PatchEmbedder {
    /// Fails unless `patch_size` is positive and `position_table` has a second axis (`[2, P, D]`).
    pub fn new(input_proj: Linear, position_table: SharedArray, patch_size: i32) -> Result<PatchEmbedder> {
        if patch_size <= 0 {
            return Err(crate::Error::input(format!("patch size {patch_size} is not positive")));
        }
        let table_size = position_table.dim(1)?;
        Ok(PatchEmbedder { input_proj, position_table, patch_size, table_size })
    }

    pub fn load(weights: &Weights, hidden: i32, patch_size: i32, table_size: i32) -> Result<PatchEmbedder> {
        let patch_dim = patch_size.saturating_mul(patch_size).saturating_mul(3);
        let input_proj = Linear::load(&weights.pp("input_proj"), patch_dim, hidden, false)?;
        let position_table = weights.get("position_embedding_table", &[2, table_size, hidden])?;
        PatchEmbedder::new(input_proj, position_table, patch_size)
    }

    /// The side of a patch in pixels (checked positive).
    pub fn patch_size(&self) -> i32 {
        self.patch_size
    }

    /// The weight dtype (the dtype of the hidden states).
    pub fn dtype(&self) -> tensor::Dtype {
        self.input_proj.weight().dtype()
    }

    /// Image path (`VisionPatchEmbedder.__call__`): `pixels` `[B, 3, H, W]` float32 in [0, 1] →
    /// `[B, (H/p)(W/p), D]`. Patchify is `reshape(B, C, pH, p, pW, p)` →
    /// `transpose(0, 2, 4, 3, 5, 1)` → `reshape(B, pH·pW, C·p²)` (each patch in `[p, p, C]`
    /// order), then as [`embed_patches`](Self::embed_patches).
    pub fn embed_pixels(&self, pixels: &Array, positions: &Array, padding: &Array) -> Result<Array> {
        let shape = pixels.shape();
        let &[b, c, h, w] = shape.as_slice() else {
            return Err(crate::Error::input(format!("pixel values must be [B, 3, H, W], found {shape:?}")));
        };
        let p = self.patch_size;
        let (ph, pw) = (h / p, w / p);
        let patches =
            pixels.reshape(&[b, c, ph, p, pw, p])?.transpose(&[0, 2, 4, 3, 5, 1])?.reshape(&[b, ph * pw, c * p * p])?;
        self.embed_patches(&patches, positions, padding)
    }

    /// Patch path (`VisionPatchEmbedder.embed_patches`): `patches` `[B, L, 3·p²]` float32 →
    /// `input_proj((2 · (patches − 0.5)).astype(W.dtype)) + position_embeddings`, weak scalars
    /// in float32. `positions` `[B, L, 2]` integer (x, y); `padding` `[B, L]` bool.
    pub fn embed_patches(&self, patches: &Array, positions: &Array, padding: &Array) -> Result<Array> {
        let scaled = patches.sub(0.5)?.mul(2)?;
        let hidden = self.input_proj.forward(&scaled.astype(self.dtype())?)?;
        Ok(hidden.add(&self.position_embeddings(positions, padding)?)?)
    }

    /// `_position_embeddings`: the reference multiplies a one-hot `[B, 2, L, P]` (float32 cast
    /// to the table dtype) by the tables and sums the two axes, then zeroes padding patches.
    /// A one-hot product picks exactly one table row (every other term is an exact zero), so
    /// this gathers the rows instead (`take`) and adds the x and y rows in the table dtype —
    /// the same single rounding as the reference's two-element sum — at a fraction of the cost.
    /// Ids outside `[0, P)` select nothing in the one-hot, so they contribute zero here too.
    pub fn position_embeddings(&self, positions: &Array, padding: &Array) -> Result<Array> {
        let shape = positions.shape();
        let &[b, l, 2] = shape.as_slice() else {
            return Err(crate::Error::input(format!("positions must be [B, L, 2], found {shape:?}")));
        };
        let hidden = self.position_table.dim(2)?;
        // Axis 0 looks up the x (column) table, axis 1 the y (row) table.
        let rows = |axis: i32| -> Result<Array> {
            let table = self.position_table.slice_axis(0, axis, axis + 1)?.reshape(&[self.table_size, hidden])?;
            let ids = positions.slice_axis(-1, axis, axis + 1)?.reshape(&[b * l])?.astype(tensor::Dtype::I32)?;
            let in_range = ids.gt(-1)?.logical_and(&ids.lt(self.table_size)?)?;
            let rows = table.take(&in_range.select(&ids, 0)?, 0)?;
            Ok(in_range.expand_dims(-1)?.select(&rows, 0.0)?.reshape(&[b, l, hidden])?)
        };
        let sum = rows(0)?.add(&rows(1)?)?;
        Ok(padding.expand_dims(-1)?.select(0.0, &sum)?)
    }
}
