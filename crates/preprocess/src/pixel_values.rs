//! The gemma4 (SigLIP) encoder's image input.

use crate::rescale::RescaleTable;
use crate::{Preprocessor, RgbImage};
use rayon::prelude::*;

/// `pixel_values` of one image for the gemma4 encoder: float32 `[3, height, width]` (CHW),
/// values in `[0, 1]` with the default rescale, exactly the reference processor's
/// `np.transpose(image.astype(np.float32) * rescale_factor, (2, 0, 1))`.
#[derive(Debug, Clone, PartialEq)]
pub struct PixelValues {
    /// `[3, height, width]` row-major.
    pub data: Vec<f32>,
    /// Rows (a multiple of `patch_size * pooling_kernel_size` after the budget resize).
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// Soft tokens this image becomes: `(height // patch) * (width // patch) // pool^2`, i.e.
    /// `(height / 48) * (width / 48)` for the defaults.
    pub soft_tokens: usize,
}

impl PixelValues {
    /// Rescales/normalises `image` (already resized) with `processor`'s settings and lays it
    /// out channels-first; the soft tokens follow its patch and pooling sizes.
    pub fn from_image(image: &RgbImage, processor: &Preprocessor) -> PixelValues {
        let table = RescaleTable::new(processor.config());
        let (h, w) = (image.height() as usize, image.width() as usize);
        let plane = h * w;
        let mut data = vec![0f32; 3 * plane];
        let (r, rest) = data.split_at_mut(plane);
        let (g, b) = rest.split_at_mut(plane);
        let planes = r.par_chunks_mut(w.max(1)).zip(g.par_chunks_mut(w.max(1))).zip(b.par_chunks_mut(w.max(1)));
        planes.enumerate().for_each(|(y, ((r, g), b))| {
            let row = &image.data()[y * w * 3..(y + 1) * w * 3];
            for (i, px) in row.chunks_exact(3).enumerate() {
                r[i] = table.get(px[0], 0);
                g[i] = table.get(px[1], 1);
                b[i] = table.get(px[2], 2);
            }
        });
        let patch = processor.patch_size().get() as usize;
        let pool = processor.pooling_kernel_size().get() as usize;
        let soft_tokens = (h / patch) * (w / patch) / (pool * pool);
        PixelValues { data, height: h, width: w, soft_tokens }
    }
}
