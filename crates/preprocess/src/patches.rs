//! Square patches with positions, padded to a fixed length: the gemma4 padded (video) path's
//! 16x16 patches and the gemma4_unified encoder's 48x48 model patches.

use crate::rescale::RescaleTable;
use crate::{Error, Limits, ProcessorConfig, Result, RgbImage};

/// Patches of one image, padded or truncated to `len` rows.
///
/// Mirrors `_convert_video_to_patches` / `_convert_image_to_model_patches` followed by
/// `_pad_video_patches` / `_pad_patches` (mlx-vlm `processing_gemma4.py`,
/// `processing_gemma4_unified.py`): the channels-first image `[C, H, W]` is reshaped to
/// `[C, pH, P, pW, P]`, transposed to `[pH, pW, P, P, C]` and flattened, so row
/// `py * pW + px` holds feature `(r * P + c) * 3 + ch` = pixel `(py * P + r, px * P + c)`,
/// channel `ch`. Position of that row: `(x, y) = (px, py)`. Rows past the real ones are zeros
/// with position `(-1, -1)`; real rows past `len` are dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct Patches {
    /// float32 `[len, patch * patch * 3]`.
    pub data: Vec<f32>,
    /// int64 `[len, 2]`, `(column, row)` of each patch in the patch grid, `(-1, -1)` for padding.
    pub positions: Vec<i64>,
    /// Rows (the padded length).
    pub len: usize,
    /// Values per row: `patch * patch * 3`.
    pub dim: usize,
    /// Side of a patch in pixels.
    pub patch: usize,
    /// Patch-grid rows (`height / patch`) and columns (`width / patch`) of the image.
    pub grid: (usize, usize),
    /// Rows holding patches, `min(grid rows * grid columns, len)`.
    pub real: usize,
}

impl Patches {
    /// Patchifies `image` (both sides multiples of `patch`) with the processor's rescale and
    /// normalisation applied to every value. `len × patch² × 3` values are allocated; more than
    /// an image of [`Limits::PILLOW_BOMB_PIXELS`] pixels holds is refused.
    pub fn from_image(image: &RgbImage, patch: usize, len: usize, config: &ProcessorConfig) -> Result<Patches> {
        let (h, w) = (image.height() as usize, image.width() as usize);
        if patch == 0 || h % patch != 0 || w % patch != 0 {
            return Err(Error::invalid(
                "patchify",
                format!("{h}x{w} image is not a whole number of {patch}x{patch} patches"),
            ));
        }
        let dim = patch * patch * 3;
        let max_values = 3 * Limits::PILLOW_BOMB_PIXELS as usize;
        if len.checked_mul(dim).is_none_or(|values| values > max_values) {
            return Err(Error::invalid(
                "patchify",
                format!("{len} rows of {dim} values exceed the {max_values} values of the largest image"),
            ));
        }
        let table = RescaleTable::new(config);
        let grid = (h / patch, w / patch);
        let count = grid.0 * grid.1;
        let real = count.min(len);
        let row_bytes = w * 3;
        let line = patch * 3;
        let source = |k: usize, r: usize| {
            let (py, px) = (k / grid.1, k % grid.1);
            let start = (py * patch + r) * row_bytes + px * line;
            &image.data()[start..start + line]
        };
        // One pass over the memory, each value written once, no zeroing first: the values are
        // written about as fast as memory takes them, so one thread does it.
        let mut data = Vec::with_capacity(len * dim);
        for k in 0..real {
            for r in 0..patch {
                table.extend(source(k, r), &mut data);
            }
        }
        data.resize(len * dim, 0.0);
        let mut positions = vec![-1i64; len * 2];
        for (k, position) in positions.chunks_exact_mut(2).take(real).enumerate() {
            position.copy_from_slice(&[(k % grid.1) as i64, (k / grid.1) as i64]);
        }
        Ok(Patches { data, positions, len, dim, patch, grid, real })
    }

    /// The inverse of the patch layout: the real rows put back as a channels-first `[3, H, W]`
    /// float32 image (`H, W` from [`grid`](Self::grid)). Exact when no row was truncated.
    /// Fields that contradict each other (the struct is public) are an
    /// [`Error::InvalidArgument`].
    pub fn to_chw(&self) -> Result<Vec<f32>> {
        let p = self.patch;
        let size = || -> Option<(usize, usize)> {
            let dim = p.checked_mul(p)?.checked_mul(3)?;
            let (h, w) = (self.grid.0.checked_mul(p)?, self.grid.1.checked_mul(p)?);
            let consistent = p > 0
                && dim == self.dim
                && self.len.checked_mul(dim)? == self.data.len()
                && self.real <= self.grid.0.checked_mul(self.grid.1)?.min(self.len)
                && h.checked_mul(w)? as u64 <= Limits::PILLOW_BOMB_PIXELS;
            consistent.then_some((h, w))
        };
        let Some((h, w)) = size() else {
            return Err(Error::invalid(
                "patches",
                format!(
                    "{} values in {} rows of {} do not hold {} real rows of a {}x{} grid of {p}-pixel patches",
                    self.data.len(),
                    self.len,
                    self.dim,
                    self.real,
                    self.grid.0,
                    self.grid.1
                ),
            ));
        };
        let mut chw = vec![0f32; 3 * h * w];
        for (k, row) in self.data.chunks_exact(self.dim).take(self.real).enumerate() {
            let (py, px) = (k / self.grid.1, k % self.grid.1);
            for (f, &v) in row.iter().enumerate() {
                let (r, c, ch) = (f / (p * 3), (f / 3) % p, f % 3);
                chw[ch * h * w + (py * p + r) * w + px * p + c] = v;
            }
        }
        Ok(chw)
    }
}
