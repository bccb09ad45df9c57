//! Arrays across the boundary through the buffer protocol: model inputs (`mx.array` or NumPy)
//! read into the encoder's arrays, features written into new `mx.array`s. One copy each way.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use tensor::{Array, Dtype, SharedArray};

/// The MLX dtype of an `mx.array` (or NumPy array), from its `dtype` attribute; `None` for an
/// object without one or of a dtype [`Dtype`] does not name.
pub fn dtype_of(object: &Bound<'_, PyAny>) -> Option<Dtype> {
    let name: String = object.getattr("dtype").ok()?.str().ok()?.extract().ok()?;
    name.trim_start_matches("mlx.core.").parse().ok()
}

/// The shape of `object`'s `shape` attribute.
pub fn shape_of(object: &Bound<'_, PyAny>) -> PyResult<Vec<i32>> {
    object.getattr("shape")?.extract()
}

/// `object`'s values (any buffer of `T`: an `mx.array`, which evaluates itself to export it,
/// or a NumPy array) as an array of its shape, copied once into a buffer the encoder owns. The
/// copy is on purpose: MLX may reuse an input's buffer for an op's output when the input holds
/// it alone, so an array over the caller's memory could be overwritten by the encoder's graph.
/// Settled ([`SharedArray`]), to be handed to the code that runs with the GIL released.
/// `input` names the object in errors (a `ValueError` saying what it is instead).
pub fn read<T>(object: &Bound<'_, PyAny>, input: &str) -> PyResult<SharedArray>
where
    T: pyo3::buffer::Element + tensor::Element,
{
    let buffer = PyBuffer::<T>::get(object).map_err(|_| {
        let found = dtype_of(object).map_or_else(|| object.get_type().to_string(), |d| d.to_string());
        PyValueError::new_err(format!("{input}: expected {} values, found {found}", T::DTYPE))
    })?;
    let shape = buffer
        .shape()
        .iter()
        .map(|&n| i32::try_from(n))
        .collect::<Result<Vec<i32>, _>>()
        .map_err(|_| PyValueError::new_err(format!("{input}: an extent does not fit in 32 bits")))?;
    Array::from_vec(buffer.to_vec(object.py())?, &shape)
        .and_then(SharedArray::new)
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// Integer position ids (int64 or int32, the dtypes mlx-vlm's processors and users make).
pub fn read_ids(object: &Bound<'_, PyAny>, input: &str) -> PyResult<SharedArray> {
    match dtype_of(object) {
        Some(Dtype::I32) => read::<i32>(object, input),
        Some(Dtype::I64) | None => read::<i64>(object, input),
        Some(other) => Err(PyValueError::new_err(format!("{input}: expected int64 or int32 values, found {other}"))),
    }
}

/// A new evaluated `mx.array` of `shape` holding `array`'s values: made by MLX (`mx.zeros`),
/// then written through its buffer, the one copy out (MLX's Python binding copies any foreign
/// CPU memory it imports, so an array over our buffer cannot be had without one). bf16 and f16
/// values are written as their `uint16` bits and viewed back.
pub fn to_mlx<'py>(py: Python<'py>, array: &Array, shape: &[i32]) -> PyResult<Bound<'py, PyAny>> {
    let mx = py.import("mlx.core")?;
    let compute = |e: tensor::Error| PyRuntimeError::new_err(e.to_string());
    let (container, view) = match array.dtype() {
        Dtype::Bf16 => ("uint16", Some("bfloat16")),
        Dtype::F16 => ("uint16", Some("float16")),
        Dtype::F32 => ("float32", None),
        other => return Err(PyRuntimeError::new_err(format!("features of dtype {other} cannot be handed to MLX"))),
    };
    let out = mx.call_method1("zeros", (shape.to_vec(), mx.getattr(container)?))?;
    mx.call_method1("eval", (&out,))?;
    array
        .with_bytes(|bytes| -> PyResult<()> {
            let shape_error = |e: bytemuck::PodCastError| PyRuntimeError::new_err(format!("features: {e}"));
            match view {
                Some(_) => PyBuffer::<u16>::get(&out)?
                    .copy_from_slice(py, bytemuck::try_cast_slice::<u8, u16>(bytes).map_err(shape_error)?),
                None => PyBuffer::<f32>::get(&out)?
                    .copy_from_slice(py, bytemuck::try_cast_slice::<u8, f32>(bytes).map_err(shape_error)?),
            }
        })
        .map_err(compute)??;
    match view {
        Some(dtype) => out.call_method1("view", (mx.getattr(dtype)?,)),
        None => Ok(out),
    }
}
