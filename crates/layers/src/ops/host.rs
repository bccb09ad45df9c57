//! The bridge between MLX arrays and the `kernels` crate: when an op runs on the host, the
//! element types, evaluated slices and new arrays from host buffers.

use crate::Result;
use tensor::{Array, Dtype, Element, HostBuffer};

/// An element type both MLX arrays and the host kernels hold: `f32` and `bf16`.
pub(crate) trait HostFloat: kernels::Float + Element {}
impl HostFloat for f32 {}
impl HostFloat for half::bf16 {}

/// `x`'s elements as a `Vec<T>` (row-major; `T` must be its dtype).
pub(crate) fn to_host<T: HostFloat>(x: &Array) -> Result<Vec<T>> {
    Ok(x.to_vec::<T>()?)
}

/// `x`'s elements converted to `T` (as MLX's `astype`; a widening, exact, wherever MLX would
/// promote).
pub(crate) fn converted<T: HostFloat>(x: &Array) -> Result<Vec<T>> {
    let dtype = <T as Element>::DTYPE;
    let x = if x.dtype() == dtype { x.clone() } else { x.astype(dtype)? };
    to_host::<T>(&x)
}

/// Calls `f` with `x`'s elements (row-major, evaluated; `T` must be its dtype), no copy for a
/// contiguous array.
pub(crate) fn with_host<T: Element, R>(x: &Array, f: impl FnOnce(&[T]) -> R) -> Result<R> {
    Ok(x.with_slice(f)?)
}

/// Calls the fallible `f` with the elements of `x` and `y` (as [`with_host`]).
pub(crate) fn with_two<A: HostFloat, B: HostFloat, R>(
    x: &Array,
    y: &Array,
    f: impl FnOnce(&[A], &[B]) -> Result<R>,
) -> Result<R> {
    x.with_slice(|a: &[A]| y.with_slice(|b: &[B]| f(a, b)))??
}

/// A zero-filled output of `shape`, in the buffer its array will use (no copy when the kernel
/// has written it: [`HostBuffer::into_array`]).
pub(crate) fn output<T: HostFloat>(shape: &[i32]) -> Result<HostBuffer<T>> {
    Ok(HostBuffer::zeros(shape)?)
}

/// An output holding `x`'s elements (`T` must be its dtype), for a kernel that works in place:
/// one copy into the buffer its array will use.
pub(crate) fn output_copy<T: HostFloat>(x: &Array) -> Result<HostBuffer<T>> {
    Ok(HostBuffer::copy_of(x)?)
}

/// A 0-d float array's value as float32 (exact for the host floats).
pub(crate) fn scalar_f32(x: &Array) -> Result<f32> {
    Ok(x.astype(Dtype::F32)?.item::<f32>()?)
}

/// `shape` with its last extent replaced by `last` (a product's output shape).
pub(crate) fn with_last(mut shape: Vec<i32>, last: usize) -> Vec<i32> {
    if let Some(extent) = shape.last_mut() {
        *extent = last as i32;
    }
    shape
}

/// The extents `(rows, width)` of `x` `[…, width]` as a row-major matrix.
pub(crate) fn rows(x: &Array) -> (usize, usize) {
    let width = x.shape().last().map_or(0, |&w| w as usize);
    (x.size().checked_div(width).unwrap_or(0), width)
}
