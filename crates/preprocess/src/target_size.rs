//! The resize target: the largest multiple-of-`patch * pool` size within the patch budget.

use crate::{Error, Result};

/// Height and width (in that order, like the reference) an image is resized to.
pub type TargetSize = (u32, u32);

/// Mirrors `get_aspect_ratio_preserving_size(height, width, patch_size, max_patches,
/// pooling_kernel_size)` of mlx-vlm's `processing_gemma4.py`, in its exact double-precision op
/// order:
///
/// ```text
/// factor = sqrt(max_patches * patch^2 / (height * width))
/// side   = pool * patch
/// th     = floor(factor * height / side) * side      # (factor * height) / side
/// tw     = floor(factor * width  / side) * side
/// both 0            -> ValueError                    (Error::ZeroTargetSize)
/// max_side = (max_patches // pool^2) * side
/// th == 0 -> th = side; tw = min(floor(width / height) * side, max_side)
/// tw == 0 -> tw = side; th = min(floor(height / width) * side, max_side)   # elif
/// ```
///
/// The gemma4 processors call it with `max_patches = max_soft_tokens * pool^2`. Dimensions are
/// limited to a product below 2^53 so that every integer the reference converts to a double is
/// exact (any image within [`Limits`](crate::Limits) is).
pub fn target_size(
    height: u32,
    width: u32,
    patch_size: u32,
    max_patches: u32,
    pooling_kernel_size: u32,
) -> Result<TargetSize> {
    let base = Base::new(height, width, patch_size, max_patches, pooling_kernel_size)?;
    let (mut th, mut tw) = base.scaled();
    if th == 0 && tw == 0 {
        return Err(Error::ZeroTargetSize {
            height: height.into(),
            width: width.into(),
            max_patches: max_patches.into(),
        });
    }
    if th == 0 {
        th = base.side;
        tw = base.degenerate_side(base.width, base.height);
    } else if tw == 0 {
        tw = base.side;
        th = base.degenerate_side(base.height, base.width);
    }
    Ok((to_u32(th)?, to_u32(tw)?))
}

/// Mirrors the size arithmetic inlined in `Gemma4VideoProcessor._resize_frames` (mlx-vlm
/// `processing_gemma4.py`), which differs from [`target_size`] in two ways: a 0x0 result is not
/// an error, and the width fix-up is a second `if` (not `elif`), so it also runs after the height
/// fix-up. A zero dimension can still come out (a budget below `pool^2`); resizing to it fails.
pub fn video_frame_size(
    height: u32,
    width: u32,
    patch_size: u32,
    max_patches: u32,
    pooling_kernel_size: u32,
) -> Result<TargetSize> {
    let base = Base::new(height, width, patch_size, max_patches, pooling_kernel_size)?;
    let (mut th, mut tw) = base.scaled();
    if th == 0 {
        th = base.side;
        tw = base.degenerate_side(base.width, base.height);
    }
    if tw == 0 {
        tw = base.side;
        th = base.degenerate_side(base.height, base.width);
    }
    Ok((to_u32(th)?, to_u32(tw)?))
}

/// The shared first steps of both formulas.
struct Base {
    height: u64,
    width: u64,
    side: u64,
    max_side: u64,
    factor: f64,
}

impl Base {
    fn new(height: u32, width: u32, patch_size: u32, max_patches: u32, pool: u32) -> Result<Self> {
        if patch_size == 0 || pool == 0 {
            return Err(Error::invalid(
                "patch geometry",
                format!("patch_size {patch_size} and pooling_kernel_size {pool} must be positive"),
            ));
        }
        if height == 0 || width == 0 {
            return Err(Error::ZeroSize { width: width.into(), height: height.into() });
        }
        let (height, width) = (u64::from(height), u64::from(width));
        let area = height * width;
        if area >= 1 << 53 {
            return Err(Error::invalid("image size", format!("{height}x{width}: the product must be below 2^53")));
        }
        let (patch, pool, max_patches) = (u64::from(patch_size), u64::from(pool), u64::from(max_patches));
        // max_patches * patch^2 < 2^32 * 2^64 may not fit: compute in u128 and convert once,
        // exactly like Python's int -> float conversion (round to nearest).
        let target_px = u128::from(max_patches) * u128::from(patch) * u128::from(patch);
        let factor = (int_to_f64(target_px) / area as f64).sqrt();
        let side = pool.saturating_mul(patch);
        let max_side = (max_patches / pool.saturating_mul(pool)).saturating_mul(side);
        Ok(Base { height, width, side, max_side, factor })
    }

    /// `floor(factor * height / side) * side` and the same for the width.
    fn scaled(&self) -> (u64, u64) {
        let side = self.side as f64;
        let th = floor_to_u64(self.factor * self.height as f64 / side).saturating_mul(self.side);
        let tw = floor_to_u64(self.factor * self.width as f64 / side).saturating_mul(self.side);
        (th, tw)
    }

    /// `min(floor(numerator / denominator) * side, max_side)`.
    fn degenerate_side(&self, numerator: u64, denominator: u64) -> u64 {
        floor_to_u64(numerator as f64 / denominator as f64).saturating_mul(self.side).min(self.max_side)
    }
}

/// Python's `float(int)`: round to nearest (ties to even) for any size.
fn int_to_f64(value: u128) -> f64 {
    // `as` rounds to nearest-even for u128 -> f64, as Python does.
    value as f64
}

/// `int(math.floor(x))` for the non-negative finite values these formulas produce; saturates
/// instead of wrapping (the result is then rejected by `to_u32`).
fn floor_to_u64(x: f64) -> u64 {
    x.floor() as u64
}

fn to_u32(value: u64) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::invalid("target size", format!("{value} does not fit in u32")))
}
