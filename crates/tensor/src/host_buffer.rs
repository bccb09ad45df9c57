//! [`HostBuffer`]: a new array's elements, written on the host in the buffer MLX will use.

use crate::array::element_count;
use crate::status::api;
use crate::{Array, Element, Error, Result};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::ptr::NonNull;

/// The elements of a new row-major array of dtype `T`, in a buffer of MLX's own allocator, for
/// host code to write before [`HostBuffer::into_array`] hands the array over: MLX then uses the
/// buffer as it is. (An array built from a Rust buffer, [`Array::from_vec`], is copied by MLX's
/// CPU backend, whose allocator cannot adopt a foreign buffer.)
///
/// The elements start at zero. The buffer is this value's alone until `into_array`: its array
/// is not reachable from anywhere else, so the slice [`DerefMut`] gives is the only access.
/// Like [`Array`], neither `Send` nor `Sync`; the slice itself may be split over threads.
///
/// ```compile_fail,E0277
/// use gemma_vision_tensor::HostBuffer;
///
/// let buffer = HostBuffer::<f32>::zeros(&[4])?;
/// // would move the array, and its MLX handle, to another thread
/// std::thread::spawn(move || buffer.into_array());
/// # Ok::<(), gemma_vision_tensor::Error>(())
/// ```
pub struct HostBuffer<T: Element> {
    /// A fresh, evaluated array that owns the buffer alone (never cloned or lent out).
    array: Array,
    /// The buffer's first element: `len` initialised, aligned values of `T`.
    data: NonNull<T>,
    len: usize,
    _element: PhantomData<T>,
}

impl<T: Element> HostBuffer<T> {
    /// Zeros of `shape` (every extent ≥ 0) in a new buffer of MLX's allocator.
    #[track_caller]
    pub fn zeros(shape: &[i32]) -> Result<HostBuffer<T>> {
        let (array, data, len) = Self::allocate("HostBuffer::zeros", shape)?;
        // SAFETY: `data` addresses `len` elements of `T` in a buffer referenced by `array`
        // alone (`allocate`), so nothing else reads or writes it; zeros are a valid `T`
        // (`Element` is sealed to plain numbers).
        unsafe { data.as_ptr().write_bytes(0, len) };
        Ok(HostBuffer { array, data, len, _element: PhantomData })
    }

    /// `x`'s elements (row-major; `T` must be its dtype), copied once into a new buffer of
    /// MLX's allocator: a host kernel that works in place then writes its array's own buffer.
    #[track_caller]
    pub fn copy_of(x: &Array) -> Result<HostBuffer<T>> {
        const OP: &str = "HostBuffer::copy_of";
        if x.dtype() != T::DTYPE {
            return Err(Error::Dtype { op: OP, expected: T::DTYPE, actual: x.dtype() });
        }
        let (array, data, len) = Self::allocate(OP, &x.shape())?;
        x.with_slice(|source: &[T]| {
            if source.len() != len {
                return Err(Error::Shape { op: OP, detail: format!("{} elements for {len}", source.len()) });
            }
            // SAFETY: `data` addresses `len` elements of `T` in a buffer referenced by `array`
            // alone (`allocate`), which `source` (another array's live buffer, or a copy of it)
            // cannot overlap; `source` holds `len` initialised elements.
            unsafe { data.as_ptr().copy_from_nonoverlapping(source.as_ptr(), len) };
            Ok(())
        })??;
        Ok(HostBuffer { array, data, len, _element: PhantomData })
    }

    /// A fresh array of `shape` and its buffer's first element: `len` elements of `T`, aligned,
    /// their contents unspecified until the caller writes every one. The array is reachable
    /// from nowhere else, so the caller has the buffer to itself.
    #[track_caller]
    fn allocate(op: &'static str, shape: &[i32]) -> Result<(Array, NonNull<T>, usize)> {
        let invalid = || Error::Shape { op, detail: format!("invalid shape {shape:?}") };
        let len = element_count(shape).ok_or_else(invalid)?;
        len.checked_mul(size_of::<T>()).filter(|&bytes| isize::try_from(bytes).is_ok()).ok_or_else(invalid)?;
        let ndim = i32::try_from(shape.len()).map_err(|_| invalid())?;
        // SAFETY: `shape` is a live slice of `ndim` extents, each ≥ 0 (`element_count`), which
        // mlx-c copies; the call returns a handle of its own (empty on failure), which
        // `from_ctor` adopts or frees.
        let array = Array::from_ctor(op, || unsafe {
            api().mlx_ffi_array_new_allocated(shape.as_ptr(), ndim, T::DTYPE.to_raw())
        })?;
        if len == 0 {
            return Ok((array, NonNull::dangling(), len));
        }
        // SAFETY: `array.as_raw()` is live while `array` is; the array was made with its data
        // (no primitive, nothing to evaluate), so `mlx_array_data_uint8` returns the address of
        // its buffer's first byte (null on failure) and copies nothing. The buffer holds
        // `len · size_of::<T>()` bytes: `mlx_ffi_array_new_allocated` allocates exactly the
        // shape's bytes for `T::DTYPE`, whose C++ type has `T`'s size.
        let bytes = unsafe { api().mlx_array_data_uint8(array.as_raw()) }.cast_mut();
        let data = NonNull::new(bytes.cast::<T>())
            .filter(|data| data.as_ptr().is_aligned())
            .ok_or_else(|| Error::Mlx { op, message: "no aligned buffer".into(), location: Location::caller() })?;
        Ok((array, data, len))
    }

    /// The array, its elements as written.
    pub fn into_array(self) -> Array {
        self.array
    }
}

impl<T: Element> Deref for HostBuffer<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `data` addresses `len` initialised, aligned values of `T` (set up in `zeros`),
        // kept alive by `self.array`, which no other code can reach; the borrow of `self` keeps
        // out any `&mut` to them for the slice's lifetime.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.len) }
    }
}

impl<T: Element> DerefMut for HostBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and the exclusive borrow of `self` makes this the only access
        // to the elements while the slice lives.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }
}

impl<T: Element> std::fmt::Debug for HostBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer").field("dtype", &T::DTYPE).field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dtype;
    use half::bf16;

    #[test]
    fn written_elements_are_the_array_s_and_start_at_zero() {
        let mut buffer = HostBuffer::<f32>::zeros(&[2, 3]).unwrap();
        assert_eq!(&*buffer, &[0.0; 6]);
        for (i, x) in buffer.iter_mut().enumerate() {
            *x = i as f32 * 0.5;
        }
        let array = buffer.into_array();
        assert_eq!((array.shape(), array.dtype()), (vec![2, 3], Dtype::F32));
        assert_eq!(array.to_vec::<f32>().unwrap(), [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
        // The array computes like any other.
        assert_eq!(array.add(1.0).unwrap().to_vec::<f32>().unwrap(), [1.0, 1.5, 2.0, 2.5, 3.0, 3.5]);
    }

    #[test]
    fn every_buffer_is_its_own() {
        let mut a = HostBuffer::<bf16>::zeros(&[4]).unwrap();
        let b = HostBuffer::<bf16>::zeros(&[4]).unwrap();
        a.fill(bf16::ONE);
        assert_eq!(&*b, &[bf16::ZERO; 4]);
        let (a, b) = (a.into_array(), b.into_array());
        assert_eq!(a.to_vec::<bf16>().unwrap(), [bf16::ONE; 4]);
        assert_eq!(b.to_vec::<bf16>().unwrap(), [bf16::ZERO; 4]);
    }

    #[test]
    fn a_copy_holds_the_source_s_elements_in_a_buffer_of_its_own() {
        let source = Array::from_vec(vec![1.0f32, -2.0, 3.5, 0.25], &[2, 2]).unwrap();
        let mut copy = HostBuffer::<f32>::copy_of(&source).unwrap();
        assert_eq!(&*copy, &[1.0, -2.0, 3.5, 0.25]);
        copy[0] = 9.0;
        let copy = copy.into_array();
        assert_eq!(copy.shape(), vec![2, 2]);
        assert_eq!(copy.to_vec::<f32>().unwrap(), [9.0, -2.0, 3.5, 0.25]);
        assert_eq!(source.to_vec::<f32>().unwrap(), [1.0, -2.0, 3.5, 0.25]);
        // A lazy, non-contiguous source is evaluated and read in row-major order.
        let transposed = source.transpose(&[1, 0]).unwrap();
        assert_eq!(&*HostBuffer::<f32>::copy_of(&transposed).unwrap(), &[1.0, 3.5, -2.0, 0.25]);
        assert!(matches!(HostBuffer::<bf16>::copy_of(&source), Err(Error::Dtype { .. })));
    }

    #[test]
    fn empty_and_invalid_shapes() {
        let empty = HostBuffer::<f32>::zeros(&[0, 5]).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.into_array().shape(), vec![0, 5]);
        assert!(matches!(HostBuffer::<f32>::zeros(&[-1, 2]), Err(Error::Shape { .. })));
        assert!(matches!(HostBuffer::<f32>::zeros(&[i32::MAX, i32::MAX, i32::MAX]), Err(Error::Shape { .. })));
    }
}
