//! mlx-vlm's pixel inputs (`mx.array`s or NumPy arrays, or lists of them), read while the GIL
//! is held into [`ReadInputs`], which become [`vision::ModelInputs`] once it is released.

use crate::mlx_arrays::{read, read_ids};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use tensor::SharedArray;
use vision::{Family, ModelInputs};

/// The arrays of one call's pixel inputs, as read off the Python objects: settled
/// ([`SharedArray`]) so that they may be handed to the closure that runs with the GIL released,
/// where [`into_model_inputs`](Self::into_model_inputs) checks them.
#[derive(Debug)]
pub enum ReadInputs {
    /// [`ModelInputs::pixels`].
    Pixels(SharedArray),
    /// [`ModelInputs::pixel_list`].
    PixelList(Vec<SharedArray>),
    /// [`ModelInputs::patches`].
    Patches(SharedArray, Option<SharedArray>),
    /// [`ModelInputs::patch_list`].
    PatchList(Vec<(SharedArray, SharedArray)>),
}

impl ReadInputs {
    /// The [`ModelInputs`] these arrays make, checked by its constructors.
    pub fn into_model_inputs(self) -> vision::Result<ModelInputs> {
        match self {
            ReadInputs::Pixels(pixels) => ModelInputs::pixels(pixels.into_inner()),
            ReadInputs::PixelList(images) => {
                ModelInputs::pixel_list(images.into_iter().map(SharedArray::into_inner).collect())
            }
            ReadInputs::Patches(patches, ids) => {
                ModelInputs::patches(patches.into_inner(), ids.map(SharedArray::into_inner))
            }
            ReadInputs::PatchList(videos) => ModelInputs::patch_list(
                videos.into_iter().map(|(patches, ids)| (patches.into_inner(), ids.into_inner())).collect(),
            ),
        }
    }
}

/// `pixel_values` (with `position_ids`, if any) as the model of `family` takes them (lists only
/// where [`Family::takes_input_lists`]):
/// - gemma4: `[B, 3, H, W]` pixels, or a list of images of different sizes; with ids, patch
///   rows `[B, L, 3p²]` / video frames `[B, T, L, 3p²]`, or a list of videos with a list of ids;
/// - gemma4_unified: model patches `[B, N, 3P²]` or video frames `[V, T, N, 3P²]`, with or
///   without ids.
///
/// Every array is copied once into the encoder's memory ([`read`]).
pub fn extract(
    family: &dyn Family,
    pixel_values: &Bound<'_, PyAny>,
    position_ids: Option<&Bound<'_, PyAny>>,
) -> PyResult<ReadInputs> {
    Ok(match (family.takes_input_lists(), items(pixel_values), position_ids) {
        (true, Some(images), None) => ReadInputs::PixelList(
            images.iter().map(|image| read::<f32>(image, "pixel_values[i]")).collect::<PyResult<_>>()?,
        ),
        (true, Some(videos), Some(ids)) => {
            let ids = items(ids).ok_or_else(|| {
                PyValueError::new_err("position ids: a list of pixel values takes a list of position ids")
            })?;
            if ids.len() != videos.len() {
                return Err(PyValueError::new_err(format!(
                    "position ids: {} arrays for {} pixel value arrays",
                    ids.len(),
                    videos.len()
                )));
            }
            let pairs = videos
                .iter()
                .zip(&ids)
                .map(|(patches, ids)| Ok((read::<f32>(patches, "pixel_values[i]")?, read_ids(ids, "position_ids[i]")?)))
                .collect::<PyResult<Vec<(SharedArray, SharedArray)>>>()?;
            ReadInputs::PatchList(pairs)
        }
        (true, None, None) => ReadInputs::Pixels(read::<f32>(pixel_values, "pixel_values")?),
        (_, None, ids) => {
            let ids = ids.map(|ids| read_ids(ids, "position_ids")).transpose()?;
            ReadInputs::Patches(read::<f32>(pixel_values, "pixel_values")?, ids)
        }
        (false, Some(_), _) => {
            return Err(PyValueError::new_err(format!(
                "pixel_values: {} takes one array of model patches [B, N, D], not a list",
                family.model_type()
            )));
        }
    })
}

/// The items of a list or tuple; `None` for anything else.
fn items<'py>(object: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = object.cast::<PyList>() {
        return Some(list.iter().collect());
    }
    object.cast::<PyTuple>().ok().map(|tuple| tuple.iter().collect())
}
