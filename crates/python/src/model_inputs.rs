//! mlx-vlm's pixel inputs (`mx.array`s or NumPy arrays, or lists of them) as
//! [`vision::ModelInputs`].

use crate::errors::to_python;
use crate::mlx_arrays::{read, read_ids};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use tensor::Array;
use vision::{Family, ModelInputs};

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
) -> PyResult<ModelInputs> {
    let inputs = match (family.takes_input_lists(), items(pixel_values), position_ids) {
        (true, Some(images), None) => ModelInputs::pixel_list(
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
                .collect::<PyResult<Vec<(Array, Array)>>>()?;
            ModelInputs::patch_list(pairs)
        }
        (true, None, None) => ModelInputs::pixels(read::<f32>(pixel_values, "pixel_values")?),
        (_, None, ids) => {
            let ids = ids.map(|ids| read_ids(ids, "position_ids")).transpose()?;
            ModelInputs::patches(read::<f32>(pixel_values, "pixel_values")?, ids)
        }
        (false, Some(_), _) => {
            return Err(PyValueError::new_err(format!(
                "pixel_values: {} takes one array of model patches [B, N, D], not a list",
                family.model_type()
            )));
        }
    };
    inputs.map_err(to_python)
}

/// The items of a list or tuple; `None` for anything else.
fn items<'py>(object: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = object.cast::<PyList>() {
        return Some(list.iter().collect());
    }
    object.cast::<PyTuple>().ok().map(|tuple| tuple.iter().collect())
}
