//! [`PreparedImage`]: one image or video frame prepared for its family's encoder, and how
//! prepared images are stacked into a batch.

use crate::{Error, Result};
use preprocess::{Patches, PixelValues};
use tensor::Array;

/// One image prepared for its encoder by [`VisionEncoder::prepare`](crate::VisionEncoder::prepare)
/// (or a frame by [`prepare_video`](crate::VisionEncoder::prepare_video)).
#[derive(Debug, Clone, PartialEq)]
pub enum PreparedImage {
    /// gemma4 image path: `[3, H, W]` float32 pixels.
    Pixels(PixelValues),
    /// gemma4 position-id path (video frames, pre-patchified input) or gemma4_unified model
    /// patches, padded, with positions.
    Patches(Patches),
}

/// Prepared images of one key can run as one batch ([`Family::batch_key`](crate::Family::batch_key)):
/// pixels of one size, or patch rows of one length and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BatchKey {
    kind: u8,
    rows: usize,
    columns: usize,
}

impl PreparedImage {
    /// The key of the input's kind and shape: `(height, width)` for pixels, `(len, dim)` for
    /// patch rows.
    pub(crate) fn shape_key(&self) -> BatchKey {
        match self {
            PreparedImage::Pixels(p) => BatchKey { kind: 0, rows: p.height, columns: p.width },
            PreparedImage::Patches(p) => BatchKey { kind: 1, rows: p.len, columns: p.dim },
        }
    }
}

/// Indices of `images` grouped by `key`, groups in order of first appearance, indices in input
/// order.
pub(crate) fn batches(images: &[PreparedImage], key: impl Fn(&PreparedImage) -> BatchKey) -> Vec<Vec<usize>> {
    let mut groups: Vec<(BatchKey, Vec<usize>)> = Vec::new();
    for (i, image) in images.iter().enumerate() {
        let k = key(image);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, members)) => members.push(i),
            None => groups.push((k, vec![i])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// `[B, 3, H, W]` float32 from same-sized pixel inputs.
pub(crate) fn stack_pixels(images: &[PreparedImage], group: &[usize]) -> Result<Array> {
    let mut data = Vec::new();
    let (mut h, mut w) = (0, 0);
    for &i in group {
        let Some(PreparedImage::Pixels(p)) = images.get(i) else {
            return Err(Error::input("mixed inputs in a batch"));
        };
        (h, w) = (p.height, p.width);
        data.extend_from_slice(&p.data);
    }
    Ok(Array::from_slice(&data, &[group.len() as i32, 3, h as i32, w as i32])?)
}

/// `[B, L, D]` float32 patches and `[B, L, 2]` int64 positions from same-length patch inputs.
pub(crate) fn stack_patches(images: &[PreparedImage], group: &[usize]) -> Result<(Array, Array)> {
    let (mut data, mut positions) = (Vec::new(), Vec::new());
    let (mut len, mut dim) = (0, 0);
    for &i in group {
        let Some(PreparedImage::Patches(p)) = images.get(i) else {
            return Err(Error::input("mixed inputs in a batch"));
        };
        if (len, dim) != (0, 0) && (len, dim) != (p.len, p.dim) {
            return Err(Error::input(format!("patch inputs of {}×{} and {len}×{dim} in one call", p.len, p.dim)));
        }
        (len, dim) = (p.len, p.dim);
        data.extend_from_slice(&p.data);
        positions.extend_from_slice(&p.positions);
    }
    let b = group.len() as i32;
    Ok((Array::from_slice(&data, &[b, len as i32, dim as i32])?, Array::from_slice(&positions, &[b, len as i32, 2])?))
}
