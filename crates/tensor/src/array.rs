//! [`Array`]: an owned MLX array handle.

use crate::status::{LAST_ERROR, api, check, clear_error, init, take_error, without_mlx_c_location};
use crate::{Dtype, Element, Error, Result};
use mlx_ffi as ffi;
use std::fmt;
use std::marker::PhantomData;
use std::panic::Location;

/// The null handle: what mlx-c's optional array parameters (declared `/* may be null */`) take
/// for "absent". mlx-c reports a null handle passed anywhere else as an error.
pub(crate) const ABSENT: ffi::mlx_array = ffi::mlx_array { ctx: std::ptr::null_mut() };

/// An MLX array: a lazily evaluated n-dimensional tensor.
///
/// Owns one mlx-c handle. `Clone` shares the underlying data (a reference-count copy);
/// `Drop` releases it. Shapes are `i32` as in MLX; axes may be negative (from the end).
///
/// # Threads
/// An `Array` is neither `Send` nor `Sync`: it stays on the thread that made it. Clones of an
/// unevaluated array, and arrays built on it, share MLX graph nodes that evaluation reads and
/// writes without locks, so an array on two threads could be evaluated on both at once. What
/// crosses threads is a [`SharedArray`](crate::SharedArray): evaluated and settled, read-only
/// for MLX, `Send + Sync`. See the crate docs' thread model.
///
/// Moving an unevaluated clone to another thread does not compile:
///
/// ```compile_fail,E0277
/// use gemma_vision_tensor::Array;
///
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?.add(1.0)?;
/// let clone = x.clone(); // shares `x`'s unevaluated node
/// let other = std::thread::spawn(move || clone.eval());
/// x.eval()?; // would evaluate the same node on two threads at once
/// # other.join().unwrap()?;
/// # Ok::<(), gemma_vision_tensor::Error>(())
/// ```
///
/// Nor does sharing `&Array` between threads:
///
/// ```compile_fail,E0277
/// use gemma_vision_tensor::Array;
///
/// let x = Array::from_slice(&[1.0f32, 2.0], &[2])?.add(1.0)?;
/// std::thread::scope(|scope| {
///     scope.spawn(|| x.eval());
///     scope.spawn(|| x.eval());
/// });
/// # Ok::<(), gemma_vision_tensor::Error>(())
/// ```
///
/// Evaluated into a [`SharedArray`](crate::SharedArray), the same value serves any number of
/// threads:
///
/// ```
/// use gemma_vision_tensor::{Array, SharedArray};
///
/// let x = SharedArray::new(Array::from_slice(&[1.0f32, 2.0], &[2])?.add(1.0)?)?;
/// let sums = std::thread::scope(|scope| {
///     let a = scope.spawn(|| x.add(1.0)?.to_vec::<f32>());
///     let b = scope.spawn(|| x.mul(2.0)?.to_vec::<f32>());
///     Ok::<_, gemma_vision_tensor::Error>((a.join().unwrap()?, b.join().unwrap()?))
/// })?;
/// assert_eq!(sums, (vec![3.0, 4.0], vec![4.0, 6.0]));
/// let moved = x.clone();
/// assert_eq!(std::thread::spawn(move || moved.to_vec::<f32>()).join().unwrap()?, [2.0, 3.0]);
/// # Ok::<(), gemma_vision_tensor::Error>(())
/// ```
pub struct Array {
    /// Owned by this `Array` alone (a clone holds a handle of its own) and freed only by `Drop`:
    /// "live" for as long as the `Array` is. Non-null, except after an allocation failure in
    /// `Clone`; mlx-c reports a null handle as an error wherever it is used.
    raw: ffi::mlx_array,
    /// Read once when the handle is adopted, so that an array of a dtype this crate does not
    /// name cannot exist.
    dtype: Dtype,
    /// Keeps `Array` neither `Send` nor `Sync` whatever the FFI handle's type: the nodes it
    /// reaches are used from this thread alone (see the type's docs).
    _thread_bound: PhantomData<*const ()>,
}

impl Array {
    /// Takes ownership of a handle mlx-c just produced, reading its dtype. Fails (freeing the
    /// handle) when the handle is empty or holds a dtype [`Dtype`] does not name.
    ///
    /// # Safety
    /// `raw` must be a handle from mlx-c (null or live) that nothing else frees: ownership
    /// passes to the returned [`Array`] or, on failure, the handle is freed here.
    #[track_caller]
    pub(crate) unsafe fn adopt(raw: ffi::mlx_array, op: &'static str) -> Result<Array> {
        let location = Location::caller();
        if raw.ctx.is_null() {
            return Err(Error::Mlx { op, message: "MLX returned no array".to_owned(), location });
        }
        // SAFETY: `raw` is a live handle (non-null, checked above) that the caller passed to us;
        // `mlx_array_dtype` only reads the array's descriptor.
        let code = unsafe { api().mlx_array_dtype(raw) };
        match Dtype::from_raw(code) {
            Ok(dtype) => Ok(Array { raw, dtype, _thread_bound: PhantomData }),
            Err(_) => {
                // SAFETY: the caller gave us sole ownership of `raw` and it is not wrapped in an
                // `Array` on this path, so it is freed exactly once, here.
                unsafe { api().mlx_array_free(raw) };
                Err(Error::Mlx { op, message: format!("MLX returned an array of unknown dtype {code}"), location })
            }
        }
    }

    pub(crate) fn as_raw(&self) -> ffi::mlx_array {
        self.raw
    }

    /// The handle of `array`, or [`ABSENT`] for `None`: for mlx-c's optional array parameters.
    pub(crate) fn raw_or_absent(array: Option<&Array>) -> ffi::mlx_array {
        array.map_or(ABSENT, Array::as_raw)
    }

    /// An array holding a copy of `data`, shaped `shape` (row-major).
    #[track_caller]
    pub fn from_slice<T: Element>(data: &[T], shape: &[i32]) -> Result<Array> {
        let ndim = check_fills("from_slice", data.len(), shape)?;
        // SAFETY: `data` is borrowed for the call and holds `data.len()` values of `T`, whose size
        // and alignment are those of `T::DTYPE`'s C++ type (`Element` is sealed to such types);
        // `check_fills` showed that `shape` (passed as its own pointer and length, `ndim`) has
        // exactly `data.len()` elements, so mlx-c reads exactly `data`. It copies the values into a
        // buffer of its own before returning.
        Array::from_ctor("from_slice", || unsafe {
            api().mlx_array_new_data(data.as_ptr().cast(), shape.as_ptr(), ndim, T::DTYPE.to_raw())
        })
    }

    /// An array taking ownership of `data` without copying it, shaped `shape` (row-major).
    /// MLX frees the vector when the last array using the buffer is dropped (possibly on
    /// another thread). Should MLX refuse the buffer, the vector is leaked rather than risk
    /// a double free.
    #[track_caller]
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[i32]) -> Result<Array> {
        let ndim = check_fills("from_vec", data.len(), shape)?;
        if data.is_empty() {
            return Array::from_slice(&data, shape);
        }
        /// The deleter mlx-c calls when the last array using the vector's buffer is freed.
        ///
        /// # Safety
        /// `payload` must come from `Box::into_raw` on a `Box<Vec<T>>` and be passed here once;
        /// the vector is dropped.
        unsafe extern "C" fn drop_vec<T>(payload: *mut std::ffi::c_void) {
            // SAFETY: `payload` is the `Box<Vec<T>>` leaked below; mlx-c calls its deleter once,
            // when the buffer's last user is freed, so the box is reclaimed exactly once. `T` is
            // `Send` (`Element`), so dropping it on whichever thread that is, is sound.
            drop(unsafe { Box::from_raw(payload.cast::<Vec<T>>()) });
        }
        let mut boxed = Box::new(data);
        let ptr = boxed.as_mut_ptr().cast::<std::ffi::c_void>();
        let payload = Box::into_raw(boxed).cast::<std::ffi::c_void>();
        // SAFETY: `ptr` addresses the vector's `data.len()` values of `T` (size and alignment of
        // `T::DTYPE`'s C++ type, as `Element` is sealed), exactly the element count of `shape`
        // (`check_fills`), which is passed as its own pointer and length (`ndim`) and copied by
        // mlx-c. The buffer is owned by `payload` (moving the box did not move the heap buffer)
        // and nothing on the Rust side touches it again: MLX alone reads (and may write) it until
        // it calls `drop_vec::<T>(payload)` once.
        Array::from_ctor("from_vec", || unsafe {
            api().mlx_array_new_data_managed_payload(
                ptr,
                shape.as_ptr(),
                ndim,
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
        // SAFETY: `self.raw` is live while `self` is borrowed; `mlx_array_shape` returns a pointer
        // into the array descriptor's shape vector (or null on failure), which it does not copy.
        let ptr = unsafe { api().mlx_array_shape(self.raw) };
        if ptr.is_null() || ndim == 0 {
            return Vec::new();
        }
        // SAFETY: `ptr` (non-null) points to the `ndim` ints of the shape vector of the descriptor
        // `self` keeps alive for this borrow; MLX never changes an array's shape after it is
        // made, and the ints are copied out before the borrow ends.
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
        // SAFETY: `self.raw` is live while `self` is borrowed; the accessor only reads the array's
        // descriptor (and reports failure as 0 rather than touching memory).
        unsafe { api().mlx_array_ndim(self.raw) }
    }

    /// Number of elements.
    pub fn size(&self) -> usize {
        // SAFETY: `self.raw` is live while `self` is borrowed; the accessor only reads the array's
        // descriptor (and reports failure as 0 rather than touching memory).
        unsafe { api().mlx_array_size(self.raw) }
    }

    /// Bytes of element data (size × dtype size).
    pub fn nbytes(&self) -> usize {
        // SAFETY: `self.raw` is live while `self` is borrowed; the accessor only reads the array's
        // descriptor (and reports failure as 0 rather than touching memory).
        unsafe { api().mlx_array_nbytes(self.raw) }
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// Evaluates the array (and the graph it depends on).
    #[track_caller]
    pub fn eval(&self) -> Result<()> {
        // SAFETY: `self.raw` is live while `self` is borrowed. Evaluation writes to the nodes of
        // the graph it computes. Every handle to those nodes is an `Array` of this thread
        // (`Array` is neither `Send` nor `Sync`), so no other thread uses them meanwhile; the
        // nodes other threads can reach too are settled (`SharedArray`), and evaluation only
        // reads those.
        check("eval", || unsafe { api().mlx_array_eval(self.raw) })
    }

    /// Evaluates several arrays together, sharing their common subgraphs.
    #[track_caller]
    pub fn eval_all(arrays: &[&Array]) -> Result<()> {
        let vector = crate::vector::VectorArray::new(arrays)?;
        // SAFETY: `vector` is a live vector handle holding its own references to the arrays, which
        // `arrays` keeps borrowed; evaluation writes only to nodes of this thread, as in `eval`.
        check("eval", || unsafe { api().mlx_eval(vector.raw()) })
    }

    /// Whether the array's data has been computed.
    pub fn is_evaluated(&self) -> bool {
        let mut available = false;
        // SAFETY: `self.raw` is live while `self` is borrowed; `available` is a valid `bool` the
        // call writes through its exclusive pointer. The first call after evaluation moves the node
        // from `evaluated` to `available`: a write to a node of this thread alone, as in `eval`
        // (a settled node, the only kind other threads reach, is already `available`, and only
        // read).
        check("is_available", || unsafe { api()._mlx_array_is_available(&mut available, self.raw) }).is_ok()
            && available
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
        self.with_dense_bytes("to_vec", |bytes| {
            let mut out = vec![T::zeroed(); self.size()];
            let target = bytemuck::cast_slice_mut::<T, u8>(&mut out);
            if target.len() != bytes.len() {
                return Err(Error::Shape {
                    op: "to_vec",
                    detail: format!("{} bytes of data for {} elements", bytes.len(), out.len()),
                });
            }
            target.copy_from_slice(bytes);
            Ok(out)
        })?
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
        self.with_dense_bytes("with_bytes", f)
    }

    /// Evaluates a row-contiguous version of the array (itself, or a copy) and calls `f` with
    /// its `nbytes` bytes of data in row-major order: the one place host code reads MLX's
    /// buffers. Errors name `op`.
    #[track_caller]
    fn with_dense_bytes<R>(&self, op: &'static str, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let dense = self.contiguous()?;
        dense.eval()?;
        let mut row_contiguous = false;
        // SAFETY: `dense.raw` is live while `dense` is; `row_contiguous` is a valid `bool` the
        // call writes through its exclusive pointer.
        check("is_row_contiguous", || unsafe { api()._mlx_array_is_row_contiguous(&mut row_contiguous, dense.raw) })?;
        if !row_contiguous {
            return Err(Error::Shape { op, detail: "array is not row-contiguous after copy".into() });
        }
        let len = dense.nbytes();
        if len == 0 {
            return Ok(f(&[]));
        }
        // SAFETY: `dense.raw` is live; `mlx_array_data_uint8` returns the address of the array's
        // first element in its (evaluated) buffer, or null on failure, and copies nothing. On
        // MLX's CUDA backend it first moves a device buffer to unified memory (a write to the
        // buffer): a buffer other threads can reach is a settled node's, already moved, so the
        // move only ever happens to a buffer of this thread's own nodes.
        let ptr = unsafe { api().mlx_array_data_uint8(dense.raw) };
        if ptr.is_null() {
            return Err(Error::Shape { op, detail: "array has no data".into() });
        }
        // SAFETY: `dense` is evaluated (`eval` waits for the computation to finish) and
        // row-contiguous, so `len` = `nbytes` bytes from its first element lie in its buffer,
        // initialised. The buffer stays alive and unwritten while `f` runs: `dense` holds a
        // reference to it and is not reachable from `f`, and MLX writes into an input's buffer
        // (donation) only when that array holds the buffer's sole reference, which `dense`'s own
        // reference rules out for every array `f` can reach. The slice does not outlive `dense`.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
        Ok(f(bytes))
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
    ///
    /// # The op-call contract
    /// Every `call` in this crate is one mlx-c op, `mlx_<op>(out, inputs…, stream)`, in an
    /// `unsafe` block that is sound for these reasons, which its `SAFETY` comment refers to:
    /// - `out` is the pointer this function passes: valid for the call, to a null handle that
    ///   mlx-c replaces with a newly allocated array on success; this function then owns it.
    /// - every input handle comes from an [`Array`] (or a `VectorArray`) the closure borrows,
    ///   so it is live for the call; mlx-c takes its own references to the inputs it keeps.
    ///   Where an input is optional, the null handle stands for "absent", as mlx-c documents
    ///   (`/* may be null */`); mlx-c reports any other null handle as an error.
    /// - `stream` is this thread's current stream (`device::current_stream`), taken after
    ///   every other argument was built, and nothing replaces it before the call.
    /// - every pointer and length pair is one Rust slice's own pointer and length, borrowed
    ///   for the call; every `char *` is a `CString` or `c"…"` literal that outlives it. mlx-c
    ///   copies what it keeps of both before returning.
    #[track_caller]
    pub(crate) fn from_op(op: &'static str, call: impl FnOnce(*mut ffi::mlx_array) -> i32) -> Result<Array> {
        let location = Location::caller();
        init()?;
        clear_error();
        // SAFETY: `mlx_array_new` has no preconditions; it returns a null handle (no allocation)
        // for the call to fill, which this function owns from here on.
        let mut raw = unsafe { api().mlx_array_new() };
        if call(&mut raw) != 0 {
            // SAFETY: `raw` is ours (null, or whatever the failed call left in it) and is not
            // wrapped in an `Array`, so it is freed exactly once, here; freeing null is a no-op.
            unsafe { api().mlx_array_free(raw) };
            return Err(Error::Mlx { op, message: take_error(), location });
        }
        // SAFETY: the call succeeded, so `raw` holds the new array mlx-c allocated for this
        // handle alone; ownership passes to `adopt`.
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
    /// through the error handler. `call` must return a handle that nothing else owns (every
    /// `mlx_array_new*` constructor does), as it is freed or adopted here.
    #[track_caller]
    pub(crate) fn from_ctor(op: &'static str, call: impl FnOnce() -> ffi::mlx_array) -> Result<Array> {
        let location = Location::caller();
        init()?;
        clear_error();
        let raw = call();
        match LAST_ERROR.with(|slot| slot.borrow_mut().take()).map(without_mlx_c_location) {
            Some(message) => {
                // SAFETY: the constructor returned a handle of its own making (null after a
                // failure, as mlx-c's constructors do), owned by us alone and not wrapped: freed
                // exactly once, here.
                unsafe { api().mlx_array_free(raw) };
                Err(Error::Mlx { op, message, location })
            }
            // SAFETY: the constructor succeeded and returned a newly allocated handle that only
            // we hold; ownership passes to `adopt`.
            None => unsafe { Array::adopt(raw, op) },
        }
    }
}

/// Checks that `len` values fill `shape` exactly (an [`Error::Shape`] naming `op` otherwise),
/// returning the number of axes as mlx-c's `int`.
fn check_fills(op: &'static str, len: usize, shape: &[i32]) -> Result<i32> {
    let count = element_count(shape).ok_or_else(|| Error::Shape { op, detail: format!("invalid shape {shape:?}") })?;
    if count != len {
        return Err(Error::Shape {
            op,
            detail: format!("{len} values do not fill shape {shape:?} ({count} elements)"),
        });
    }
    i32::try_from(shape.len()).map_err(|_| Error::Shape { op, detail: format!("{} axes are too many", shape.len()) })
}

/// Product of a shape's extents, or `None` for a negative extent or overflow.
pub(crate) fn element_count(shape: &[i32]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| usize::try_from(d).ok().and_then(|d| acc.checked_mul(d)))
}

impl Clone for Array {
    fn clone(&self) -> Array {
        // SAFETY: `mlx_array_new` has no preconditions and returns a null handle, owned here.
        let mut raw = unsafe { api().mlx_array_new() };
        // SAFETY: `self.raw` is live while `self` is borrowed; `raw` is a valid, exclusively
        // borrowed null handle, which `mlx_array_set` points at a new `mlx::core::array` sharing
        // `self`'s descriptor (a reference-count copy). Should that allocation fail, `raw` stays
        // null: every mlx-c function reports a null handle as an error, and freeing it is a no-op.
        unsafe { api().mlx_array_set(&mut raw, self.raw) };
        Array { raw, dtype: self.dtype, _thread_bound: PhantomData }
    }
}

impl Drop for Array {
    fn drop(&mut self) {
        // SAFETY: `self.raw` is owned by this `Array` alone (every `Array` holds its own handle,
        // `Clone` included) and is freed once, here; the arrays it shares data with keep theirs.
        unsafe { api().mlx_array_free(self.raw) };
    }
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Array({:?}, {})", self.shape(), self.dtype())
    }
}
