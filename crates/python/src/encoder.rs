//! `gemma_vision.Encoder`: a loaded encoder shared by Python threads.

use crate::arrays::{self, HostFeatures};
use crate::errors::{to_python, to_python_as};
use crate::inputs::{self, Input};
use crate::{held_parameters, mlx_arrays, model_inputs};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use std::path::PathBuf;
use tensor::SharedArray;
use vision::{
    CacheIdentity, Checkpoint, ComputeDtype, EncoderOptions, MlxVlmModel, ModelSource, SoftTokenBudget, VisionEncoder,
};

/// A Gemma 4 vision encoder loaded once from a model directory or a Hub repository by name.
///
/// `encode` releases the GIL while it decodes and encodes, so one encoder may serve several
/// Python threads at once; each image's features are the same bits whichever thread, batch or
/// call computes them.
#[pyclass(frozen, module = "gemma_vision", name = "Encoder")]
#[derive(Debug)]
pub struct Encoder {
    inner: VisionEncoder,
    model_dir: PathBuf,
    dtype: ComputeDtype,
    budget: Option<SoftTokenBudget>,
}

#[pymethods]
impl Encoder {
    /// Loads the encoder of `model`: a model directory (os.PathLike, or a str naming an
    /// existing path: config.json, model.safetensors or shards with an index, optionally
    /// processor_config.json), or a Hugging Face Hub repository as a str, "org/name" or
    /// "org/name@revision" (found in the Hugging Face cache as mlx-vlm leaves it, else only its
    /// vision tensors fetched; HF_ENDPOINT, HF_HOME, HF_TOKEN and HF_HUB_OFFLINE apply).
    /// `dtype`: "native" (the checkpoint's dtype, bit-exact with mlx-vlm) or "f32".
    /// `max_soft_tokens`: the default budget of `encode` (else processor_config.json's, else 280).
    #[new]
    #[pyo3(signature = (model, dtype = "native", max_soft_tokens = None))]
    fn new(py: Python<'_>, model: &Bound<'_, PyAny>, dtype: &str, max_soft_tokens: Option<i64>) -> PyResult<Encoder> {
        crate::errors::catching_panics(|| {
            let source = model_source(model)?;
            let dtype = compute_dtype(dtype)?;
            let budget = budget(max_soft_tokens)?;
            let options = EncoderOptions { compute_dtype: dtype, ..EncoderOptions::default() };
            let inner = py
                .detach(|| {
                    let encoder = VisionEncoder::load(source, options)?;
                    encoder.preprocessor(budget)?;
                    Ok(encoder)
                })
                .map_err(to_python)?;
            let model_dir = inner.checkpoint().dir().to_path_buf();
            Ok(Encoder { inner, model_dir, dtype, budget })
        })
    }

    /// Soft tokens of `images`, one `[n_i, D]` array per image in input order.
    ///
    /// An image is a path (str or os.PathLike), the bytes of an image file (JPEG, PNG, GIF,
    /// WebP, BMP, TIFF; EXIF orientation applied, as for files), or a uint8 array [H, W, 3]
    /// (e.g. `np.asarray(pil_image.convert("RGB"))`, used as it is). Features are float32 for
    /// float32 encoders and `ml_dtypes.bfloat16` (the exact bits) for bf16 checkpoints, or
    /// float32 with `as_float32=True`.
    #[pyo3(signature = (images, max_soft_tokens = None, as_float32 = false))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        images: &Bound<'py, PyAny>,
        max_soft_tokens: Option<i64>,
        as_float32: bool,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        crate::errors::catching_panics(|| {
            if images.cast::<PyString>().is_ok()
                || images.cast::<PyBytes>().is_ok()
                || images.cast::<PyByteArray>().is_ok()
                || images.hasattr("__fspath__")?
                || images.hasattr("__array_interface__")?
            {
                return Err(PyTypeError::new_err("encode takes a list of images; wrap a single image in a list"));
            }
            let inputs: Vec<Input> = images
                .try_iter()?
                .enumerate()
                .map(|(i, image)| inputs::extract(i, &image?))
                .collect::<PyResult<_>>()?;
            if inputs.is_empty() {
                return Ok(Vec::new());
            }
            let budget = budget(max_soft_tokens)?.or(self.budget);
            let host = py.detach(|| self.encode_inputs(inputs, budget, as_float32))?;
            arrays::to_numpy(py, host)
        })
    }

    /// The encoder of `model_dir` whose vision weights are exactly `parameters`: `(name,
    /// mx.array)` pairs under their sanitized names, every vision parameter of an mlx-vlm model
    /// loaded from that directory. Each is compared with what the encoder loaded (names, dtype,
    /// shape, bytes; read in place, no copy); a model cast to float32 as a whole is served by an
    /// "f32" encoder. Raises ValueError naming the first parameter that differs.
    #[staticmethod]
    fn matching(py: Python<'_>, model_dir: PathBuf, parameters: &Bound<'_, PyAny>) -> PyResult<Encoder> {
        crate::errors::catching_panics(|| {
            let held = held_parameters::extract(parameters)?;
            let checkpoint = py.detach(|| Checkpoint::open(&model_dir)).map_err(to_python)?;
            let compute_dtype = checkpoint.held_compute_dtype(&held).map_err(to_python)?;
            let options = EncoderOptions { compute_dtype, ..EncoderOptions::default() };
            let inner = py.detach(|| VisionEncoder::from_checkpoint(checkpoint, options)).map_err(to_python)?;
            inner.check_held_weights(&held).map_err(to_python)?;
            Ok(Encoder { inner, model_dir, dtype: compute_dtype, budget: None })
        })
    }

    /// What mlx-vlm's model computes from the pixel inputs its processor made, as an mx.array:
    /// gemma4 `Model.encode_image(pixel_values, position_ids)` `[1, Σ soft tokens, D]` (images
    /// `[B, 3, H, W]` or a list of them; patch rows or video frames with their ids),
    /// gemma4_unified `Model.get_image_features` `[Σ soft tokens, D]` (model patches, or video
    /// frames `[V, T, N, D]` as `get_video_features` flattens them, with or without ids). The
    /// value to pass as `cached_image_features` (or `cached_video_features`). The inputs are
    /// copied once into the encoder and the features once into the new mx.array; the GIL is
    /// released while encoding.
    #[pyo3(signature = (pixel_values, position_ids = None))]
    fn encode_pixel_values<'py>(
        &self,
        py: Python<'py>,
        pixel_values: &Bound<'py, PyAny>,
        position_ids: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::errors::catching_panics(|| {
            let family = self.inner.family();
            let inputs = model_inputs::extract(family, pixel_values, position_ids)?;
            let encoder = &self.inner;
            let features = py
                .detach(move || {
                    let out = encoder.encode_model_inputs(&inputs.into_model_inputs()?)?;
                    Ok(SharedArray::new(out.features)?)
                })
                .map_err(to_python)?;
            let (rows, hidden) = (features.dim(0).map_err(tensor_error)?, features.dim(1).map_err(tensor_error)?);
            let shape =
                if family.model_features_have_batch_axis() { vec![1, rows, hidden] } else { vec![rows, hidden] };
            mlx_arrays::to_mlx(py, &features, &shape)
        })
    }

    /// Soft tokens of the frames of one video, one `[n_i, D]` array per kept frame, in order:
    /// what mlx-vlm's video processor and video path compute for it. `frames` are images as
    /// `encode` takes them, all of one size (or a uint8 array [T, H, W, 3]); at most the video
    /// processor's `num_frames` (32) are kept, sampled uniformly. `max_soft_tokens` is the
    /// budget per frame: 70, 140, 280, 560 or 1120 (default: the checkpoint's video processor's,
    /// else 70).
    #[pyo3(signature = (frames, max_soft_tokens = None, as_float32 = false))]
    fn encode_video<'py>(
        &self,
        py: Python<'py>,
        frames: &Bound<'py, PyAny>,
        max_soft_tokens: Option<i64>,
        as_float32: bool,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        crate::errors::catching_panics(|| {
            let inputs: Vec<Input> = frames
                .try_iter()?
                .enumerate()
                .map(|(i, frame)| inputs::extract(i, &frame?))
                .collect::<PyResult<_>>()?;
            let budget = budget(max_soft_tokens)?;
            let limits = self.inner.options().limits;
            let host = py.detach(|| -> PyResult<HostFeatures> {
                let video = self.inner.video_preprocessor(budget).map_err(to_python)?;
                let frames = inputs
                    .into_iter()
                    .enumerate()
                    .map(|(i, input)| input.decode(i, &limits))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|(kind, message)| to_python_as(kind, message))?;
                let encoder = &self.inner;
                let features = encoder.prepare_video(&frames, &video).and_then(|p| encoder.encode(&p));
                let features = features.map_err(to_python)?;
                arrays::split(&features, as_float32).map_err(|e| to_python(e.into()))
            })?;
            arrays::to_numpy(py, host)
        })
    }

    /// The cache identity (SHA-256, hex): equal identities give equal features for equal image
    /// bytes and budgets. The first call reads the weights once.
    #[getter]
    fn identity(&self, py: Python<'_>) -> PyResult<String> {
        crate::errors::catching_panics(|| py.detach(|| self.inner.cache_identity()).map_err(to_python))
    }

    /// What the encoder makes of its checkpoint, as `gemma-vision inspect --json` prints it (a
    /// dict): the tower, the quantized modules, the weight files, the budget and its source, the
    /// tensors read and ignored, the cache identity, and with `image_size` (`(width, height)`)
    /// what an image of that size becomes. `max_soft_tokens` defaults to the encoder's budget.
    #[pyo3(signature = (max_soft_tokens = None, image_size = None))]
    fn inspect<'py>(
        &self,
        py: Python<'py>,
        max_soft_tokens: Option<i64>,
        image_size: Option<(i64, i64)>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::errors::catching_panics(|| {
            let budget = budget(max_soft_tokens)?.or(self.budget);
            let image_size = match image_size {
                Some((width, height)) => Some((side("width", width)?, side("height", height)?)),
                None => None,
            };
            let json = py
                .detach(|| vision::Inspection::of(&self.inner, budget, image_size).map(|i| i.to_json()))
                .map_err(to_python)?;
            py.import("json")?.call_method1("loads", (json,))
        })
    }

    /// "gemma4" or "gemma4_unified".
    #[getter]
    fn model_type(&self) -> &'static str {
        self.inner.config().model_type.as_str()
    }

    /// D: the columns of every feature array (the language model's hidden size).
    #[getter]
    fn hidden_size(&self) -> i64 {
        i64::from(self.inner.config().text_hidden_size)
    }

    /// The default soft-token budget of `encode`.
    #[getter]
    fn max_soft_tokens(&self) -> u32 {
        self.budget.unwrap_or(self.inner.processor_config().max_soft_tokens).get()
    }

    /// "native" or "f32": the dtype the encoder computes in.
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.as_str()
    }

    /// The model directory the encoder was loaded from.
    #[getter]
    fn model_dir(&self) -> PathBuf {
        self.model_dir.clone()
    }

    fn __repr__(&self) -> String {
        format!("Encoder({:?}, dtype={:?})", self.model_dir.display().to_string(), self.dtype.as_str())
    }
}

impl Encoder {
    /// Decodes and encodes without the GIL; errors as the command reports them.
    fn encode_inputs(
        &self,
        inputs: Vec<Input>,
        budget: Option<SoftTokenBudget>,
        as_float32: bool,
    ) -> PyResult<HostFeatures> {
        let preprocessor = self.inner.preprocessor(budget).map_err(to_python)?;
        let limits = self.inner.options().limits;
        let images = inputs
            .into_iter()
            .enumerate()
            .map(|(i, input)| input.decode(i, &limits))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|(kind, message)| to_python_as(kind, message))?;
        let encoder = &self.inner;
        let prepared: vision::Result<Vec<_>> =
            images.iter().map(|image| encoder.prepare(image, &preprocessor)).collect();
        let features = prepared.and_then(|prepared| encoder.encode(&prepared)).map_err(to_python)?;
        arrays::split(&features, as_float32).map_err(|e| to_python(e.into()))
    }
}

fn tensor_error(e: tensor::Error) -> PyErr {
    to_python(e.into())
}

/// `max_soft_tokens=` as a [`SoftTokenBudget`], or none; ValueError naming the bound it breaks.
pub(crate) fn budget(max_soft_tokens: Option<i64>) -> PyResult<Option<SoftTokenBudget>> {
    max_soft_tokens
        .map(SoftTokenBudget::try_from)
        .transpose()
        .map_err(|e| PyValueError::new_err(format!("max_soft_tokens: {e}")))
}

/// A model as Python names it: a str is parsed as a user types it ([`ModelSource::parse`]: an
/// existing path, else `org/name[@revision]`), an os.PathLike is a directory.
pub(crate) fn model_source(model: &Bound<'_, PyAny>) -> PyResult<ModelSource> {
    if let Ok(text) = model.cast::<PyString>() {
        return Ok(ModelSource::parse(text.to_str()?));
    }
    if model.hasattr("__fspath__")? {
        return Ok(ModelSource::Directory(model.extract::<PathBuf>()?));
    }
    Err(PyTypeError::new_err("model: expected a str (a directory or \"org/name[@revision]\") or an os.PathLike"))
}

/// `dtype=` as a [`ComputeDtype`] by its name (`native`, `f32`; `float32` too).
pub(crate) fn compute_dtype(name: &str) -> PyResult<ComputeDtype> {
    name.parse().map_err(|e: vision::UnknownComputeDtype| PyValueError::new_err(e.to_string()))
}

/// One side of an image size: a positive pixel count.
fn side(name: &str, pixels: i64) -> PyResult<u32> {
    u32::try_from(pixels)
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| PyValueError::new_err(format!("image_size {name} must be a positive pixel count, got {pixels}")))
}
