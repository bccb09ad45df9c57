//! The images `Encoder.encode` accepts: paths, encoded bytes, `uint8` arrays `[H, W, 3]`.

use preprocess::{DecodeOptions, Limits, RgbImage};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use std::path::PathBuf;
use vision::ErrorKind;

/// One image as handed over from Python, read off the Python objects while the GIL is held.
#[derive(Debug)]
pub enum Input {
    /// A file, decoded as `gemma-vision encode` decodes it (EXIF orientation applied).
    Path(PathBuf),
    /// The bytes of an image file, decoded like a file (EXIF orientation applied).
    Bytes(Vec<u8>),
    /// Decoded RGB pixels, used as they are (no orientation: arrays carry no EXIF).
    Pixels(RgbImage),
}

/// Reads image `index` of a call: `str` or `os.PathLike` is a path; `bytes` or `bytearray` the
/// bytes of a file; anything NumPy can view as an array (`np.ndarray`, a PIL image) must be
/// `uint8` of shape `[H, W, 3]`.
pub fn extract(index: usize, object: &Bound<'_, PyAny>) -> PyResult<Input> {
    if object.cast::<PyString>().is_ok() || object.hasattr("__fspath__")? {
        let path: PathBuf = object.extract()?;
        return Ok(Input::Path(path));
    }
    if let Ok(bytes) = object.cast::<PyBytes>() {
        return Ok(Input::Bytes(bytes.as_bytes().to_vec()));
    }
    if let Ok(bytes) = object.cast::<PyByteArray>() {
        return Ok(Input::Bytes(bytes.to_vec()));
    }
    if object.hasattr("__array_interface__")? || object.hasattr("__array__")? {
        return pixels(index, object).map(Input::Pixels);
    }
    let type_name = object.get_type().name()?;
    Err(PyTypeError::new_err(format!(
        "image {index}: expected a path (str or os.PathLike), bytes, or a uint8 array [H, W, 3], got {type_name}"
    )))
}

/// The pixels of an array-like `[H, W, 3]` `uint8` object, copied out row-major.
fn pixels(index: usize, object: &Bound<'_, PyAny>) -> PyResult<RgbImage> {
    let numpy = object.py().import("numpy")?;
    let array = numpy.call_method1("asarray", (object,))?;
    let dtype: String = array.getattr("dtype")?.str()?.extract()?;
    let shape: Vec<usize> = array.getattr("shape")?.extract()?;
    let [height, width, 3] = shape[..] else {
        return Err(PyValueError::new_err(format!(
            "image {index}: expected a uint8 array of shape [H, W, 3], got {dtype} of shape {shape:?}"
        )));
    };
    if dtype != "uint8" {
        return Err(PyValueError::new_err(format!(
            "image {index}: expected a uint8 array of shape [H, W, 3], got {dtype} of shape {shape:?}"
        )));
    }
    let too_large = || PyValueError::new_err(format!("image {index}: {height}x{width} pixels is too large"));
    let (height, width) =
        (u32::try_from(height).map_err(|_| too_large())?, u32::try_from(width).map_err(|_| too_large())?);
    let contiguous = numpy.call_method1("ascontiguousarray", (array,))?;
    let bytes = contiguous.call_method0("tobytes")?;
    let data = bytes.cast::<PyBytes>()?.as_bytes().to_vec();
    RgbImage::new(width, height, data).map_err(|e| PyValueError::new_err(format!("image {index}: {e}")))
}

impl Input {
    /// The decoded image, or the kind and message of the failure: for a path, the message of
    /// `gemma-vision encode` on that file; for bytes, the decoder's message after `image {index}: `.
    pub fn decode(self, index: usize, limits: &Limits) -> Result<RgbImage, (ErrorKind, String)> {
        match self {
            Input::Path(path) => preprocess::open(&path, limits).map_err(|e| {
                let e = vision::Error::from(e);
                (e.kind(), e.to_string())
            }),
            Input::Bytes(bytes) => {
                let options = DecodeOptions { limits: *limits, apply_exif_orientation: true };
                preprocess::decode(&bytes, &options).map_err(|e| (ErrorKind::Invalid, format!("image {index}: {e}")))
            }
            Input::Pixels(image) => limits
                .check(image.width().into(), image.height().into())
                .map(|()| image)
                .map_err(|e| (ErrorKind::Invalid, format!("image {index}: {e}"))),
        }
    }
}
