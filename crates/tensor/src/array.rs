//! [`Array`]: an owned MLX array handle.

use crate::status::{LAST_ERROR, check, clear_error, init, take_error, without_mlx_c_location};
use crate::{Dtype, Element, Error, Result};
use mlx_ffi as ffi;
use std::fmt;
use std::panic::Location;

/// An MLX array: a lazily evaluated n-dimensional tensor.
///
/// Owns one mlx-c handle. `Clone` shares the underlying data (a reference-count copy);
/// `Drop` releases it. Shapes are `i32` as in MLX; axes may be negative (from the end).
pub struct Array {
    raw: ffi::mlx_array,
    /// Read once when the handle is adopted, so that an array of a dtype this crate does not
    /// name cannot exist.
    dtype: Dtype,
}

// SAFETY: an mlx array is a reference-counted C++ object whose counts are atomic; moving the
// handle between threads is sound. It is deliberately not `Sync` (see the crate docs).
unsafe impl Send for Array {}

impl Array {
    /// Takes ownership of a handle mlx-c just produced, reading its dtype. Fails (freeing the
    /// handle) when the handle is empty or holds a dtype [`Dtype`] does not name.
    ///
    /// # Safety
    /// `raw` must be a handle from mlx-c that nothing else frees.
    #[track_caller]
    pub(crate) unsafe fn adopt(raw: ffi::mlx_array, op: &'static str) -> Result<Array> {
        let location = Location::caller();
        if raw.ctx.is_null() {
            return Err(Error::Mlx { op, message: "MLX returned no array".to_owned(), location });
        }
        // SAFETY: a live handle (checked non-empty above).
        let code = unsafe { ffi::mlx_array_dtype(raw) };
        match Dtype::from_raw(code) {
            Ok(dtype) => Ok(Array { raw, dtype }),
            Err(_) => {
                // SAFETY: owned by us and not yet wrapped: freed exactly once, here.
                unsafe { ffi::mlx_array_free(raw) };
                Err(Error::Mlx { op, message: format!("MLX returned an array of unknown dtype {code}"), location })
            }
        }
    }

    pub(crate) fn as_raw(&self) -> ffi::mlx_array {
        self.raw
    }

    /// An array holding a copy of `data`, shaped `shape` (row-major).
    #[track_caller]
    pub fn from_slice<T: Element>(data: &[T], shape: &[i32]) -> Result<Array> {
        check_fills("from_slice", data.len(), shape)?;
        Array::from_ctor("from_slice", || unsafe {
            ffi::mlx_array_new_data(data.as_ptr().cast(), shape.as_ptr(), shape.len() as i32, T::DTYPE.to_raw())
        })
    }

    /// An array taking ownership of `data` without copying it, shaped `shape` (row-major).
    /// MLX frees the vector when the last array using the buffer is dropped (possibly on
    /// another thread). Should MLX refuse the buffer, the vector is leaked rather than risk
    /// a double free.
    #[track_caller]
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[i32]) -> Result<Array> {
        check_fills("from_vec", data.len(), shape)?;
        if data.is_empty() {
            return Array::from_slice(&data, shape);
        }
        unsafe extern "C" fn drop_vec<T>(payload: *mut std::ffi::c_void) {
            // SAFETY: `payload` is the `Box<Vec<T>>` leaked below, handed back exactly once.
            drop(unsafe { Box::from_raw(payload.cast::<Vec<T>>()) });
        }
        let mut boxed = Box::new(data);
        let ptr = boxed.as_mut_ptr().cast::<std::ffi::c_void>();
        let payload = Box::into_raw(boxed).cast::<std::ffi::c_void>();
        // SAFETY: `ptr` addresses `count` elements of `T`, owned by `payload` until MLX calls
        // `drop_vec::<T>(payload)`; moving the box does not move the vector's heap buffer.
        Array::from_ctor("from_vec", || unsafe {
            ffi::mlx_array_new_data_managed_payload(
                ptr,
                shape.as_ptr(),
                shape.len() as i32,
                T::DTYPE.to_raw(),
                payload,
                Some(drop_vec::<T>),
            )
        })
    }

    /// A 0-dimensional array holding `value`.
    #[track_caller]
    pub fn scalar<T: Element>(value: T) -> Result<Array> {
        Array::from_slice(&[value], &[])
    }

    /// A boolean array from host values.
    #[track_caller]
    pub fn from_bools(data: &[bool], shape: &[i32]) -> Result<Array> {
        let bytes: Vec<u8> = data.iter().map(|&b| u8::from(b)).collect();
        Array::from_slice(&bytes, shape)?.astype(Dtype::Bool)
    }

    /// The shape, one extent per axis.
    pub fn shape(&self) -> Vec<i32> {
        let ndim = self.ndim();
        // SAFETY: mlx-c returns a pointer to `ndim` ints owned by the array.
        let ptr = unsafe { ffi::mlx_array_shape(self.raw) };
        if ptr.is_null() || ndim == 0 {
            return Vec::new();
        }
        unsafe { std::slice::from_raw_parts(ptr, ndim) }.to_vec()
    }

    /// The extent of one axis; negative axes count from the end.
    #[track_caller]
    pub fn dim(&self, axis: isize) -> Result<i32> {
        let shape = self.shape();
        let index = if axis < 0 { shape.len() as isize + axis } else { axis };
        usize::try_from(index)
            .ok()
            .and_then(|i| shape.get(i).copied())
            .ok_or_else(|| Error::Shape { op: "dim", detail: format!("axis {axis} out of range for shape {shape:?}") })
    }

    /// Number of axes.
    pub fn ndim(&self) -> usize {
        unsafe { ffi::mlx_array_ndim(self.raw) }
    }

    /// Number of elements.
    pub fn size(&self) -> usize {
        unsafe { ffi::mlx_array_size(self.raw) }
    }

    /// Bytes of element data (size × dtype size).
    pub fn nbytes(&self) -> usize {
        unsafe { ffi::mlx_array_nbytes(self.raw) }
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// Evaluates the array (and the graph it depends on).
    #[track_caller]
    pub fn eval(&self) -> Result<()> {
        check("eval", || unsafe { ffi::mlx_array_eval(self.raw) })
    }

    /// Evaluates several arrays together, sharing their common subgraphs.
    #[track_caller]
    pub fn eval_all(arrays: &[&Array]) -> Result<()> {
        let vector = crate::vector::VectorArray::new(arrays)?;
        check("eval", || unsafe { ffi::mlx_eval(vector.raw()) })
    }

    /// Whether the array's data has been computed.
    pub fn is_evaluated(&self) -> bool {
        let mut available = false;
        check("is_available", || unsafe { ffi::_mlx_array_is_available(&mut available, self.raw) }).is_ok() && available
    }

    /// Evaluates the array and copies its elements out in row-major order.
    ///
    /// Fails with [`Error::Dtype`] unless `T` matches the array's dtype. Strided views
    /// (transposes, slices, broadcasts) are made contiguous first.
    #[track_caller]
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.dtype() != T::DTYPE {
            return Err(Error::Dtype { op: "to_vec", expected: T::DTYPE, actual: self.dtype() });
        }
        let dense = self.contiguous()?;
        dense.eval()?;
        let mut row_contiguous = false;
        check("is_row_contiguous", || unsafe { ffi::_mlx_array_is_row_contiguous(&mut row_contiguous, dense.raw) })?;
        if !row_contiguous {
            return Err(Error::Shape { op: "to_vec", detail: "array is not row-contiguous after copy".into() });
        }
        let mut out = vec![T::zeroed(); dense.size()];
        if out.is_empty() {
            return Ok(out);
        }
        // SAFETY: `dense` is evaluated and row-contiguous: its buffer holds `nbytes` bytes.
        let ptr = unsafe { ffi::mlx_array_data_uint8(dense.raw) };
        if ptr.is_null() {
            return Err(Error::Shape { op: "to_vec", detail: "array has no data".into() });
        }
        let bytes = unsafe { std::slice::from_raw_parts(ptr, dense.nbytes()) };
        bytemuck::cast_slice_mut::<T, u8>(&mut out).copy_from_slice(bytes);
        Ok(out)
    }

    /// Evaluates a one-element array and returns its value.
    #[track_caller]
    pub fn item<T: Element>(&self) -> Result<T> {
        match self.to_vec::<T>()?.as_slice() {
            [value] => Ok(*value),
            other => Err(Error::Shape { op: "item", detail: format!("expected one element, found {}", other.len()) }),
        }
    }

    /// Evaluates the array and calls `f` with its row-major bytes, without copying them out.
    #[track_caller]
    pub fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let dense = self.contiguous()?;
        dense.eval()?;
        if dense.nbytes() == 0 {
            return Ok(f(&[]));
        }
        // SAFETY: as in `to_vec`; the slice does not outlive `dense`.
        let ptr = unsafe { ffi::mlx_array_data_uint8(dense.raw) };
        if ptr.is_null() {
            return Err(Error::Shape { op: "with_bytes", detail: "array has no data".into() });
        }
        Ok(f(unsafe { std::slice::from_raw_parts(ptr, dense.nbytes()) }))
    }
}

impl Array {
    /// Evaluates the array and calls `f` with its elements in row-major order, without copying
    /// them out. Fails with [`Error::Dtype`] unless `T` matches the array's dtype.
    #[track_caller]
    pub fn with_slice<T: Element, R>(&self, f: impl FnOnce(&[T]) -> R) -> Result<R> {
        if self.dtype() != T::DTYPE {
            return Err(Error::Dtype { op: "with_slice", expected: T::DTYPE, actual: self.dtype() });
        }
        self.with_bytes(|bytes| bytemuck::try_cast_slice::<u8, T>(bytes).map(f))?.map_err(|e| Error::Shape {
            op: "with_slice",
            detail: format!("buffer cannot be viewed as {:?}: {e}", T::DTYPE),
        })
    }
}

/// Construction from mlx-c calls: the chokepoint every array of this crate comes through.
impl Array {
    /// Runs one mlx-c call that writes a new array into its out-parameter. On failure the
    /// (possibly allocated) output handle is freed and MLX's message returned.
    #[track_caller]
    pub(crate) fn from_op(op: &'static str, call: impl FnOnce(*mut ffi::mlx_array) -> i32) -> Result<Array> {
        let location = Location::caller();
        init();
        clear_error();
        // SAFETY: `mlx_array_new` makes an empty handle for the call to fill; it is freed here on
        // failure, else adopted (which frees it if it cannot be used).
        let mut raw = unsafe { ffi::mlx_array_new() };
        if call(&mut raw) != 0 {
            unsafe { ffi::mlx_array_free(raw) };
            return Err(Error::Mlx { op, message: take_error(), location });
        }
        // SAFETY: the call succeeded: `raw` is ours.
        let out = unsafe { Array::adopt(raw, op) }?;
        Array::check_size(op, &out)?;
        Ok(out)
    }

    /// Rejects an array whose data could not fit in memory: MLX's CPU allocator does not report
    /// an impossible allocation; evaluating such an array would crash the process instead.
    fn check_size(op: &'static str, array: &Array) -> Result<()> {
        let bytes = element_count(&array.shape()).and_then(|n| n.checked_mul(array.dtype().size()));
        let limit = crate::memory::max_array_bytes();
        match bytes {
            Some(bytes) if bytes <= limit => Ok(()),
            _ => Err(Error::TooLarge { op, shape: array.shape(), dtype: array.dtype(), limit }),
        }
    }

    /// Runs one mlx-c constructor that returns its handle directly and reports failure only
    /// through the error handler.
    #[track_caller]
    pub(crate) fn from_ctor(op: &'static str, call: impl FnOnce() -> ffi::mlx_array) -> Result<Array> {
        let location = Location::caller();
        init();
        clear_error();
        let raw = call();
        match LAST_ERROR.with(|slot| slot.borrow_mut().take()).map(without_mlx_c_location) {
            Some(message) => {
                // SAFETY: whatever handle mlx-c returned is ours to free.
                unsafe { ffi::mlx_array_free(raw) };
                Err(Error::Mlx { op, message, location })
            }
            // SAFETY: the handle was just returned to us by mlx-c.
            None => unsafe { Array::adopt(raw, op) },
        }
    }
}

/// Checks that `len` values fill `shape` exactly (an [`Error::Shape`] naming `op` otherwise).
fn check_fills(op: &'static str, len: usize, shape: &[i32]) -> Result<()> {
    let count = element_count(shape).ok_or_else(|| Error::Shape { op, detail: format!("invalid shape {shape:?}") })?;
    if count != len {
        return Err(Error::Shape {
            op,
            detail: format!("{len} values do not fill shape {shape:?} ({count} elements)"),
        });
    }
    Ok(())
}

/// Product of a shape's extents, or `None` for a negative extent or overflow.
pub(crate) fn element_count(shape: &[i32]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| usize::try_from(d).ok().and_then(|d| acc.checked_mul(d)))
}

impl Clone for Array {
    fn clone(&self) -> Array {
        // SAFETY: a fresh handle set to share `self`'s array; cannot fail for a non-empty source.
        let mut raw = unsafe { ffi::mlx_array_new() };
        unsafe { ffi::mlx_array_set(&mut raw, self.raw) };
        Array { raw, dtype: self.dtype }
    }
}

impl Drop for Array {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { ffi::mlx_array_free(self.raw) };
    }
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Array({:?}, {})", self.shape(), self.dtype())
    }
}
