//! Pillow 13's `convert("RGB")` of a `LAB` image: Little CMS's transform from Pillow's built-in
//! Lab profile to its built-in sRGB profile, over Pillow's `LAB` storage (four bytes a pixel:
//! L*, then a* and b* offset by 128, then a byte the transform ignores).
//!
//! The conversion (`Image.convert` → `ImageCms.buildTransform(createProfile("LAB"),
//! createProfile("sRGB"), "LAB", "RGB")`, `_imagingcms.c`): `cmsCreateLab2Profile(NULL)` (a
//! v2 Lab identity with the D50 white point), `cmsCreate_sRGBProfile()`, and
//! `cmsCreateTransform(lab, Lab V2 8-bit with one extra byte, srgb, TYPE_RGBA_8, perceptual,
//! flags 0)` on the global context, applied row by row with `cmsDoTransform`. These are the
//! same calls on the same Little CMS release as Pillow 13's wheels (2.19, vendored and built by
//! `lcms2-sys`), so the bytes are that library's.
//!
//! Little CMS has no Rust interface but its C API, so this module allows `unsafe`: every block
//! calls that API on handles this module created and still owns, with buffers sized for the
//! pixel count passed.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

use crate::{Error, Result};
use lcms2_sys::ffi;
use rayon::prelude::*;
use std::sync::OnceLock;

/// `_imagingcms.c`'s `findLCMStype("LAB")`: `COLORSPACE_SH(PT_LabV2) | CHANNELS_SH(3) |
/// BYTES_SH(1) | EXTRA_SH(1)`, Pillow's four-byte `LAB` pixels (the fourth byte is ignored).
const PILLOW_LAB: ffi::PixelFormat = ffi::PixelFormat((ffi::PT_LabV2.0 << 16) | (1 << 7) | (3 << 3) | 1);

/// `findLCMStype("RGB")`: `TYPE_RGBA_8`, Pillow's four-byte `RGB` pixels.
const PILLOW_RGB: ffi::PixelFormat = ffi::PixelFormat::RGBA_8;

/// Rows per parallel task.
const ROWS_PER_TASK: usize = 16;

/// Pillow's LAB to sRGB transform, built once per process.
///
/// Shared by every thread: Little CMS's transform functions (`CachedXFORM`,
/// `PrecalculatedXFORM`) only read the transform, copying its one-pixel cache to a local before
/// they use it, and every evaluation gives the same output for the same input, cached or not.
#[derive(Debug)]
struct LabToSrgb(ffi::HTRANSFORM);

// SAFETY: the handle is created once, never mutated through after `cmsCreateTransform`
// returns, and only read by `cmsDoTransform` (see the type's doc); the global context it was
// built on lives for the whole process.
unsafe impl Send for LabToSrgb {}
// SAFETY: as above: concurrent `cmsDoTransform` calls on one transform only read it.
unsafe impl Sync for LabToSrgb {}

impl LabToSrgb {
    /// Pillow's transform, or `None` if Little CMS could not build it (out of memory).
    fn build() -> Option<LabToSrgb> {
        // SAFETY: the profile constructors take no pointers but the optional white point,
        // NULL here (D50, as Pillow passes it); each returns a new handle or NULL.
        let (lab, srgb) = unsafe { (ffi::cmsCreateLab2Profile(std::ptr::null()), ffi::cmsCreate_sRGBProfile()) };
        let transform = if lab.is_null() || srgb.is_null() {
            std::ptr::null_mut()
        } else {
            // SAFETY: both profiles are live handles; the formats are valid Little CMS formats.
            unsafe { ffi::cmsCreateTransform(lab, PILLOW_LAB, srgb, PILLOW_RGB, ffi::Intent::Perceptual, 0) }
        };
        for profile in [lab, srgb] {
            if !profile.is_null() {
                // SAFETY: a live profile this function created; a transform keeps what it
                // needs of it, so the profile can go once the transform exists.
                unsafe { ffi::cmsCloseProfile(profile) };
            }
        }
        (!transform.is_null()).then_some(LabToSrgb(transform))
    }

    /// Transforms the first `count` pixels of `lab` (Pillow's `LAB` pixels, four bytes each)
    /// into `rgba` (four bytes each, the fourth left as it is). Panics if either buffer holds
    /// fewer than `count` pixels.
    fn apply(&self, lab: &[u8], rgba: &mut [u8], count: u32) {
        let bytes = count as usize * 4;
        assert!(lab.len() >= bytes && rgba.len() >= bytes, "buffers of fewer than {count} pixels");
        // SAFETY: the transform is live for the process; both buffers hold at least `count`
        // pixels of four bytes (checked above), the input format's and the output format's size.
        unsafe { ffi::cmsDoTransform(self.0, lab.as_ptr().cast(), rgba.as_mut_ptr().cast(), count) };
    }
}

/// The process's transform, built on first use; `format` names the file's format in the error.
fn transform(format: &'static str) -> Result<&'static LabToSrgb> {
    static TRANSFORM: OnceLock<Option<LabToSrgb>> = OnceLock::new();
    TRANSFORM
        .get_or_init(LabToSrgb::build)
        .as_ref()
        .ok_or_else(|| Error::unsupported(format, "CIELab: Little CMS could not build the LAB to sRGB transform"))
}

/// The RGB8 (HWC) image of `width × height` pixels whose `LAB` storage rows `storage_row(y,
/// row)` writes (`row` is `width · 4` bytes), as Pillow's `convert("RGB")` gives it. Rows are
/// converted in parallel on the one shared transform; `format` names the file's format in the
/// error when Little CMS cannot build the transform.
pub(crate) fn to_rgb(
    width: usize,
    height: usize,
    format: &'static str,
    storage_row: impl Fn(usize, &mut [u8]) + Sync,
) -> Result<Vec<u8>> {
    let transform = transform(format)?;
    let count = u32::try_from(width).map_err(|_| Error::unsupported(format, "CIELab rows of 2³² pixels or more"))?;
    let mut rgb = crate::buffer_pool::take(width * height * 3);
    if width == 0 || height == 0 {
        return Ok(rgb);
    }
    rgb.par_chunks_mut(width * 3 * ROWS_PER_TASK).enumerate().for_each(|(task, out)| {
        let mut lab = vec![0u8; width * 4];
        let mut rgba = vec![0u8; width * 4];
        for (r, dst) in out.chunks_exact_mut(width * 3).enumerate() {
            storage_row(task * ROWS_PER_TASK + r, &mut lab);
            transform.apply(&lab, &mut rgba, count);
            for (d, s) in dst.chunks_exact_mut(3).zip(rgba.chunks_exact(4)) {
                d.copy_from_slice(&s[..3]);
            }
        }
    });
    Ok(rgb)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cmsGetEncodedCMMversion` of Pillow 13's bundled `liblcms2` is 2190 (2.19).
    #[test]
    fn the_linked_little_cms_is_pillows_release() {
        // SAFETY: takes nothing, returns a constant.
        assert_eq!(unsafe { ffi::cmsGetEncodedCMMversion() }, 2190);
    }

    /// Pillow 13's `Image.new("LAB", (1, 1), v).convert("RGB")` for a few stored values.
    #[test]
    fn the_transform_gives_pillows_bytes_for_a_few_values() {
        let t = transform("test").expect("transform");
        for (lab, want) in [
            ([255, 128, 128], [254, 255, 254]),
            ([0, 128, 128], [1, 0, 1]),
            ([128, 128, 128], [119, 119, 119]),
            ([255, 0, 0], [0, 255, 255]),
        ] {
            let mut rgba = [0u8; 4];
            t.apply(&[lab[0], lab[1], lab[2], 255], &mut rgba, 1);
            assert_eq!(&rgba[..3], &want, "{lab:?}");
        }
    }
}
