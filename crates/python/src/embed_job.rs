//! `gemma_vision.embed`: the `embed` crate's corpus job, from Python.

use crate::errors::to_python_as;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use vision::{EncoderOptions, VisionEncoder};

/// Embeds a corpus of images into shards of soft tokens in `out`, resumably, with the encoder of
/// `model` (a directory, or `"org/name[@revision]"` as `Encoder` takes it): what
/// `gemma-vision embed` does (the same job, the same shards, bit for bit). `images` is a
/// directory, a glob pattern or a `.txt` list of paths. An image that fails in any way is
/// recorded in the errors file with its kind (`file_timeout`: the seconds one file may take to
/// be read and decoded) and the job goes on. Returns the run's summary as a dict.
/// The GIL is released while the job runs.
#[pyfunction]
#[pyo3(signature = (model, images, out, *, dtype = "native", max_soft_tokens = None, batch = 8, shard_size = 256, workers = None, file_timeout = 120.0))]
#[allow(clippy::too_many_arguments, reason = "the job's options as keyword arguments, as the command's flags")]
pub fn embed<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    images: PathBuf,
    out: PathBuf,
    dtype: &str,
    max_soft_tokens: Option<i64>,
    batch: usize,
    shard_size: usize,
    workers: Option<usize>,
    file_timeout: f64,
) -> PyResult<Bound<'py, PyDict>> {
    crate::errors::catching_panics(|| {
        let source = crate::encoder::model_source(model)?;
        let compute_dtype = crate::encoder::compute_dtype(dtype)?;
        let count = |name: &str, n: usize| {
            NonZeroUsize::new(n)
                .ok_or_else(|| pyo3::exceptions::PyValueError::new_err(format!("{name} must be positive")))
        };
        let defaults = ::embed::JobOptions::default();
        let options = ::embed::JobOptions {
            batch: count("batch", batch)?,
            shard_size: count("shard_size", shard_size)?,
            workers: workers.map(|n| count("workers", n)).transpose()?.unwrap_or(defaults.workers),
            budget: crate::encoder::budget(max_soft_tokens)?,
            file_timeout: timeout(file_timeout)?,
        };
        let summary = py
            .detach(|| -> Result<::embed::Summary, ::embed::Error> {
                let paths = ::embed::list_images(&images)?;
                let encoder =
                    VisionEncoder::load(source, EncoderOptions { compute_dtype, ..EncoderOptions::default() })?;
                ::embed::run(&encoder, &paths, &out, &options, &::embed::Silent)
            })
            .map_err(|e| to_python_as(e.kind(), e.to_string()))?;
        let dict = PyDict::new(py);
        dict.set_item("encoded", summary.encoded)?;
        dict.set_item("soft_tokens", summary.soft_tokens)?;
        dict.set_item("failed", summary.failed)?;
        dict.set_item("skipped", summary.skipped)?;
        dict.set_item("shards", summary.shards)?;
        dict.set_item("seconds", summary.seconds)?;
        dict.set_item("errors_total", summary.errors_total)?;
        dict.set_item("model_identity", summary.model_identity)?;
        dict.set_item("max_soft_tokens", summary.budget.get())?;
        dict.set_item("errors_file", summary.errors_file)?;
        Ok(dict)
    })
}

/// A positive number of seconds.
fn timeout(seconds: f64) -> PyResult<std::time::Duration> {
    if seconds > 0.0 {
        std::time::Duration::try_from_secs_f64(seconds)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("file_timeout: {e}")))
    } else {
        Err(pyo3::exceptions::PyValueError::new_err("file_timeout must be positive"))
    }
}
