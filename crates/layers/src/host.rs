//! The bridge between MLX arrays and the `kernels` crate: element types, evaluated slices,
//! new arrays from host buffers, and the record of which kernels ran.

use crate::{Error, Result};
use std::cell::RefCell;
use std::collections::BTreeSet;
use tensor::{Array, Dtype, Element};

/// An element type both MLX arrays and the host kernels hold: `f32` and `bf16`.
pub(crate) trait HostFloat: kernels::Float + Element {}
impl HostFloat for f32 {}
impl HostFloat for half::bf16 {}

/// Whether the host kernels take `dtype`.
pub(crate) fn is_host_float(dtype: Dtype) -> bool {
    matches!(dtype, Dtype::F32 | Dtype::Bf16)
}

/// MLX's type promotion between two floats the host kernels take: float32 if either is.
pub(crate) fn promote(a: Dtype, b: Dtype) -> Dtype {
    if a == Dtype::F32 || b == Dtype::F32 { Dtype::F32 } else { a }
}

/// Evaluates `x` with `T = f32` or `T = bf16` standing for its dtype: `$body` runs with the
/// type alias `$t` in scope. `None` for any other dtype.
macro_rules! with_host_float {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            tensor::Dtype::F32 => {
                type $t = f32;
                Some($body)
            }
            tensor::Dtype::Bf16 => {
                type $t = half::bf16;
                Some($body)
            }
            _ => None,
        }
    };
}
pub(crate) use with_host_float;

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
pub(crate) fn with_host<T: HostFloat, R>(x: &Array, f: impl FnOnce(&[T]) -> R) -> Result<R> {
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

/// The error of a host path reached with dtypes it does not take (its callers check first).
pub(crate) fn unsupported(block: &'static str, dtypes: &[Dtype]) -> Error {
    Error::Input { block, what: format!("the host kernels do not take dtypes {dtypes:?}") }
}

/// A new array holding `data`, shaped `shape`.
pub(crate) fn from_host<T: HostFloat>(data: Vec<T>, shape: &[i32]) -> Result<Array> {
    Ok(Array::from_vec(data, shape)?)
}

/// A zero-filled output buffer of `len` elements.
pub(crate) fn output<T: HostFloat>(len: usize) -> Vec<T> {
    vec![T::default(); len]
}

thread_local! {
    static KERNELS_RUN: RefCell<BTreeSet<&'static str>> = const { RefCell::new(BTreeSet::new()) };
}

/// Records that the host kernel `name` ran for a block called on this thread.
pub(crate) fn record(name: &'static str) {
    KERNELS_RUN.with(|run| run.borrow_mut().insert(name));
}

/// The host kernels that ran for blocks called on this thread since the last call, by name
/// (`"gemm"`, `"attention"`, …), sorted; the record is emptied.
pub fn take_kernels_run() -> Vec<&'static str> {
    KERNELS_RUN.with(|run| std::mem::take(&mut *run.borrow_mut())).into_iter().collect()
}
