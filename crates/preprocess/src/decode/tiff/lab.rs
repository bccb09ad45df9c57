//! CIELab TIFFs (photometric 8, three 8-bit samples) as Pillow 13 reads them and mlx-vlm's
//! `convert("RGB")` turns them into RGB: Pillow's mode `LAB` storage, then Little CMS's
//! transform from Pillow's built-in Lab profile to its built-in sRGB profile.
//!
//! The storage (`Unpack.c`): contiguous samples go through the `LAB` unpacker, which keeps L*
//! and flips the sign bit of a* and b* (`^ 128`: the file's two's complement to Pillow's
//! offset-128 bytes); planar samples are copied band by band (the raw decoder's `L`/`A`/`B`
//! band unpackers, libtiff's planes through the `RGBA` band unpackers), a* and b* unflipped.
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

use super::raster::Raster;
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

    /// Transforms `lab` (Pillow's `LAB` pixels, four bytes each) into `rgba` (four bytes each,
    /// the fourth left as it is).
    fn apply(&self, lab: &[u8], rgba: &mut [u8]) {
        let pixels = (lab.len() / 4).min(rgba.len() / 4);
        let Ok(count) = u32::try_from(pixels) else {
            return;
        };
        // SAFETY: the transform is live for the process; both buffers hold `count` pixels of
        // four bytes, the input format's and the output format's size.
        unsafe { ffi::cmsDoTransform(self.0, lab.as_ptr().cast(), rgba.as_mut_ptr().cast(), count) };
    }
}

/// The process's transform, built on first use.
fn transform() -> Result<&'static LabToSrgb> {
    static TRANSFORM: OnceLock<Option<LabToSrgb>> = OnceLock::new();
    TRANSFORM.get_or_init(LabToSrgb::build).as_ref().ok_or_else(|| {
        Error::unsupported(super::FORMAT, "CIELab: Little CMS could not build the LAB to sRGB transform")
    })
}

/// The RGB8 (HWC) image of an 8-bit CIELab raster, as Pillow 13's `convert("RGB")` gives it:
/// one plane of L*, a*, b* triplets (a* and b* signed) or three planes (bands copied as
/// stored). Rows are converted in parallel on the one shared transform.
pub fn to_rgb(raster: &Raster) -> Result<Vec<u8>> {
    let (w, h) = (raster.width, raster.height);
    let layout_ok = raster.bits == 8
        && match raster.planes.len() {
            1 => raster.samples == 3,
            3 => raster.samples == 1,
            _ => false,
        };
    if !layout_ok {
        return Err(Error::unsupported(
            super::FORMAT,
            format!("CIELab of {} planes of {} {}-bit samples", raster.planes.len(), raster.samples, raster.bits),
        ));
    }
    let transform = transform()?;
    let mut rgb = crate::buffer_pool::take(w * h * 3);
    if w == 0 || h == 0 {
        return Ok(rgb);
    }
    rgb.par_chunks_mut((w * 3 * ROWS_PER_TASK).max(1)).enumerate().for_each(|(task, out)| {
        let mut lab = vec![0u8; w * 4];
        let mut rgba = vec![0u8; w * 4];
        for (r, dst) in out.chunks_exact_mut(w * 3).enumerate() {
            storage_row(raster, task * ROWS_PER_TASK + r, &mut lab);
            transform.apply(&lab, &mut rgba);
            for (d, s) in dst.chunks_exact_mut(3).zip(rgba.chunks_exact(4)) {
                d.copy_from_slice(&s[..3]);
            }
        }
    });
    Ok(rgb)
}

/// Row `y` in Pillow's `LAB` storage: L*, a*, b*, 255 per pixel.
fn storage_row(raster: &Raster, y: usize, lab: &mut [u8]) {
    let start = y * raster.row_bytes;
    let span = start..start + raster.width * raster.samples;
    match raster.planes.as_slice() {
        [plane] => {
            let Some(src) = plane.get(span) else { return };
            for (d, s) in lab.chunks_exact_mut(4).zip(src.chunks_exact(3)) {
                d.copy_from_slice(&[s[0], s[1] ^ 128, s[2] ^ 128, 255]);
            }
        }
        [l, a, b] => {
            let (Some(l), Some(a), Some(b)) = (l.get(span.clone()), a.get(span.clone()), b.get(span)) else {
                return;
            };
            for (((d, l), a), b) in lab.chunks_exact_mut(4).zip(l).zip(a).zip(b) {
                d.copy_from_slice(&[*l, *a, *b, 255]);
            }
        }
        _ => {}
    }
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
        let t = transform().expect("transform");
        for (lab, want) in [
            ([255, 128, 128], [254, 255, 254]),
            ([0, 128, 128], [1, 0, 1]),
            ([128, 128, 128], [119, 119, 119]),
            ([255, 0, 0], [0, 255, 255]),
        ] {
            let mut rgba = [0u8; 4];
            t.apply(&[lab[0], lab[1], lab[2], 255], &mut rgba);
            assert_eq!(&rgba[..3], &want, "{lab:?}");
        }
    }
}
