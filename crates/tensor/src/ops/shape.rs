//! Shape manipulation: reshape, transpose, slicing, joining, padding.

use crate::status::api;
use crate::vector::VectorArray;
use crate::{Array, Error, Operand, Result};

impl Array {
    /// Same data, new shape; one extent may be `-1` (inferred).
    #[track_caller]
    pub fn reshape(&self, shape: &[i32]) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self`, `shape` as its own
        // pointer and length, and this thread's `stream`.
        Array::from_op("reshape", |out| unsafe {
            api().mlx_reshape(out, self.as_raw(), shape.as_ptr(), shape.len(), stream)
        })
    }

    /// Permutes the axes: output axis `i` is input axis `axes[i]`.
    #[track_caller]
    pub fn transpose(&self, axes: &[i32]) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self`, `axes` as its own
        // pointer and length, and this thread's `stream`.
        Array::from_op("transpose", |out| unsafe {
            api().mlx_transpose_axes(out, self.as_raw(), axes.as_ptr(), axes.len(), stream)
        })
    }

    /// Reverses the axes (`W.T` for a matrix).
    #[track_caller]
    pub fn t(&self) -> Result<Array> {
        let axes: Vec<i32> = (0..self.ndim() as i32).rev().collect();
        self.transpose(&axes)
    }

    /// Inserts a length-1 axis at `axis`.
    #[track_caller]
    pub fn expand_dims(&self, axis: i32) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self` and this thread's
        // `stream`.
        Array::from_op("expand_dims", |out| unsafe { api().mlx_expand_dims(out, self.as_raw(), axis, stream) })
    }

    /// Removes the given length-1 axes.
    #[track_caller]
    pub fn squeeze(&self, axes: &[i32]) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self`, `axes` as its own
        // pointer and length, and this thread's `stream`.
        Array::from_op("squeeze", |out| unsafe {
            api().mlx_squeeze_axes(out, self.as_raw(), axes.as_ptr(), axes.len(), stream)
        })
    }

    /// Broadcasts to `shape`.
    #[track_caller]
    pub fn broadcast_to(&self, shape: &[i32]) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self`, `shape` as its own
        // pointer and length, and this thread's `stream`.
        Array::from_op("broadcast_to", |out| unsafe {
            api().mlx_broadcast_to(out, self.as_raw(), shape.as_ptr(), shape.len(), stream)
        })
    }

    /// The strided slice `start..stop` (step `strides`, default 1) on every axis.
    #[track_caller]
    pub fn slice(&self, start: &[i32], stop: &[i32], strides: Option<&[i32]>) -> Result<Array> {
        let ones = vec![1; start.len()];
        let strides = strides.unwrap_or(&ones);
        if start.len() != stop.len() || start.len() != strides.len() {
            return Err(Error::Shape {
                op: "slice",
                detail: format!("start {start:?}, stop {stop:?} and strides {strides:?} differ in length"),
            });
        }
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self`; `start`, `stop` and
        // `strides` each as its own pointer and length; this thread's `stream`.
        Array::from_op("slice", |out| unsafe {
            api().mlx_slice(
                out,
                self.as_raw(),
                start.as_ptr(),
                start.len(),
                stop.as_ptr(),
                stop.len(),
                strides.as_ptr(),
                strides.len(),
                stream,
            )
        })
    }

    /// `self[..., start..stop]` along one axis (Python's `x[..., a:b]` when `axis = -1`).
    #[track_caller]
    pub fn slice_axis(&self, axis: i32, start: i32, stop: i32) -> Result<Array> {
        let shape = self.shape();
        let ndim = shape.len() as i32;
        let axis_index = if axis < 0 { axis.saturating_add(ndim) } else { axis };
        if !(0..ndim).contains(&axis_index) {
            return Err(Error::Shape { op: "slice_axis", detail: format!("axis {axis} out of range for {shape:?}") });
        }
        let mut begin = vec![0; shape.len()];
        let mut end = shape;
        begin[axis_index as usize] = start;
        end[axis_index as usize] = stop;
        self.slice(&begin, &end, None)
    }

    /// Joins arrays along `axis`.
    #[track_caller]
    pub fn concatenate(arrays: &[&Array], axis: i32) -> Result<Array> {
        let vector = VectorArray::new(arrays)?;
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `vector` of inputs and this
        // thread's `stream`.
        Array::from_op("concatenate", |out| unsafe { api().mlx_concatenate_axis(out, vector.raw(), axis, stream) })
    }

    /// Stacks arrays of one shape along a new axis.
    #[track_caller]
    pub fn stack(arrays: &[&Array], axis: i32) -> Result<Array> {
        let vector = VectorArray::new(arrays)?;
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `vector` of inputs and this
        // thread's `stream`.
        Array::from_op("stack", |out| unsafe { api().mlx_stack_axis(out, vector.raw(), axis, stream) })
    }

    /// Splits along `axis` at the given indices.
    #[track_caller]
    pub fn split(&self, indices: &[i32], axis: i32) -> Result<Vec<Array>> {
        let mut parts = VectorArray::empty()?;
        let stream = crate::device::current_stream()?;
        // SAFETY: as the op-call contract of `Array::from_op`, with `parts` (a live vector handle,
        // exclusively borrowed) as the output the call fills: the live `self`, `indices` as its own
        // pointer and length, and this thread's `stream`.
        crate::status::check("split", || unsafe {
            api().mlx_split_sections(parts.as_mut_raw(), self.as_raw(), indices.as_ptr(), indices.len(), axis, stream)
        })?;
        parts.to_arrays()
    }

    /// Pads `axes` with `low` before and `high` after each, filled with `value` (constant mode).
    #[track_caller]
    pub fn pad(&self, axes: &[i32], low: &[i32], high: &[i32], value: impl Operand) -> Result<Array> {
        let value = value.into_operand(self)?;
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self` and `value` (owned
        // here); `axes`, `low` and `high` each as its own pointer and length; a `c"…"` literal for
        // the mode; this thread's `stream`.
        Array::from_op("pad", |out| unsafe {
            api().mlx_pad(
                out,
                self.as_raw(),
                axes.as_ptr(),
                axes.len(),
                low.as_ptr(),
                low.len(),
                high.as_ptr(),
                high.len(),
                value.as_raw(),
                c"constant".as_ptr(),
                stream,
            )
        })
    }

    /// A row-contiguous copy (or the same buffer when already row-contiguous).
    #[track_caller]
    pub fn contiguous(&self) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self` and this thread's
        // `stream`.
        Array::from_op("contiguous", |out| unsafe { api().mlx_contiguous(out, self.as_raw(), false, stream) })
    }
}
