//! [`Compiled`]: a function of arrays compiled by MLX (`mlx::core::compile`, what Python's
//! `mx.compile` wraps), so that a graph the reference compiles is computed as the reference
//! computes it.
//!
//! MLX traces the function once per input signature (each thread keeps its own compile cache,
//! so a [`Compiled`] may be called from any thread), simplifies the graph, and fuses its
//! element-wise ops into one kernel where the backend can: on the CPU, MLX's JIT compiles the
//! fused kernel with the `g++` on `PATH` (none there: the ops run one by one, as uncompiled);
//! `MLX_DISABLE_COMPILE` turns compilation off. The fused kernel's arithmetic is the compiler's
//! (on aarch64 it contracts `a*b + c` into fused multiply-adds), which is why a reference graph
//! under `mx.compile` must be compiled here too to give its bits.

use crate::status::{api, check, init};
use crate::vector::{VectorArray, arrays_in};
use crate::{Array, Error, Result};
use mlx_ffi as ffi;
use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::panic::{AssertUnwindSafe, Location, catch_unwind};

/// The function a [`Compiled`] traces: arrays in, arrays out, built from this crate's ops.
pub type TracedFn = fn(&[Array]) -> Result<Vec<Array>>;

thread_local! {
    /// The error of the last trace on this thread that failed, reported by [`Compiled::apply`]
    /// in place of mlx-c's generic "the closure failed".
    static TRACE_ERROR: RefCell<Option<Error>> = const { RefCell::new(None) };
}

/// A [`TracedFn`] compiled by MLX, made once and kept for the life of the process
/// ([`new`](Self::new) gives `&'static Compiled`; keep it in a `static`).
///
/// Never freed because MLX keys each thread's traces by the compiled function's address and,
/// when the function is freed, forgets the traces of the thread that compiled it only: a later
/// `Compiled` at the same address would be served another thread's trace of the old function.
/// Shared by every thread: each call traces (once per input signature) on the calling thread.
#[derive(Debug)]
pub struct Compiled {
    raw: ffi::mlx_closure,
    name: &'static str,
}

// SAFETY: `raw` is mlx-c's handle to the `std::function` MLX's `compile` returned,
// which is never modified or freed after `new` returns: every use through `&Compiled` is a call
// of it (`operator() const`), whose captures (the function it compiled, its address as the
// cache key, the `shapeless` flag) are only read. A call reads and fills the compile cache of
// the calling thread (MLX keeps one per thread, `thread_local`) and the JIT's process-wide
// library cache, which MLX guards with a lock; it traces by calling `trace` on the calling
// thread, whose payload is a plain function pointer, and its inputs and outputs are `Array`s of
// the calling thread. No MLX node is shared between threads through a `Compiled`.
unsafe impl Send for Compiled {}
// SAFETY: as for `Send` above: a call through `&Compiled` only reads the closure.
unsafe impl Sync for Compiled {}

impl Compiled {
    /// `function` compiled by MLX: with `shapeless`, one trace serves inputs of every shape (as
    /// `mx.compile(..., shapeless=True)`), else one per shape. `name` names it in errors. The
    /// result lives for the rest of the process (see the type's docs): make one per function.
    #[track_caller]
    pub fn new(name: &'static str, function: TracedFn, shapeless: bool) -> Result<&'static Compiled> {
        init()?;
        let payload = Box::into_raw(Box::new(function)).cast::<c_void>();
        // SAFETY: `trace` has the callback signature mlx-c expects and does not unwind (it
        // catches panics); `payload` is a leaked `Box<TracedFn>` that mlx-c owns from here on
        // and releases once, through `free_payload`, when the last copy of the closure goes.
        let closure = unsafe { api().mlx_closure_new_func_payload(Some(trace), payload, Some(free_payload)) };
        let closure = Closure(closure);
        if closure.0.ctx.is_null() {
            return Err(Error::Mlx {
                op: name,
                message: "creating the closure failed".into(),
                location: Location::caller(),
            });
        }
        // SAFETY: `mlx_closure_new` has no preconditions; it returns a null closure for
        // `mlx_compile` to fill, owned by `compiled` below.
        let mut compiled = Closure(unsafe { api().mlx_closure_new() });
        // SAFETY: `compiled.0` is a live out-parameter (null, filled on success) and
        // `closure.0` a live closure, both owned here for the call; MLX keeps its own copy of
        // the function it compiles.
        check(name, || unsafe { api().mlx_compile(&mut compiled.0, closure.0, shapeless) })?;
        let raw = compiled.0;
        std::mem::forget(compiled);
        Ok(Box::leak(Box::new(Compiled { raw, name })))
    }

    /// The compiled function applied to `inputs` (traced on the first call with inputs of their
    /// kind on this thread). A failure while tracing is that failure.
    #[track_caller]
    pub fn apply(&self, inputs: &[&Array]) -> Result<Vec<Array>> {
        let input = VectorArray::new(inputs)?;
        let mut output = VectorArray::empty()?;
        TRACE_ERROR.with(|slot| slot.borrow_mut().take());
        // SAFETY: `self.raw` is this `Compiled`'s live closure; `input` and `output` are live
        // vectors owned here for the call, and mlx-c replaces `output`'s contents with the
        // results (references of its own).
        let applied =
            check(self.name, || unsafe { api().mlx_closure_apply(output.as_mut_raw(), self.raw, input.raw()) });
        if let Err(e) = applied {
            return Err(TRACE_ERROR.with(|slot| slot.borrow_mut().take()).unwrap_or(e));
        }
        output.to_arrays()
    }
}

/// An mlx-c closure owned while [`Compiled::new`] builds one; freed when dropped.
struct Closure(ffi::mlx_closure);

impl Drop for Closure {
    fn drop(&mut self) {
        // SAFETY: the closure is owned by this guard alone (a `Compiled` takes its handle out
        // and forgets the guard); freeing a null closure is a no-op.
        unsafe { api().mlx_closure_free(self.0) };
    }
}

/// mlx-c's callback: runs the [`TracedFn`] in `payload` on `input`'s arrays and sets `*res` to
/// its outputs; non-zero (the error kept in [`TRACE_ERROR`]) on failure or panic.
unsafe extern "C" fn trace(
    res: *mut ffi::mlx_vector_array,
    input: ffi::mlx_vector_array,
    payload: *mut c_void,
) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<()> {
        // SAFETY: `payload` is the `Box<TracedFn>` `Compiled::new` leaked into the closure,
        // alive while any copy of the closure is (mlx-c holds it until `free_payload`).
        let function = unsafe { *payload.cast::<TracedFn>() };
        // SAFETY: mlx-c passes a live vector it owns for the duration of the callback.
        let inputs = unsafe { arrays_in(input) }?;
        let outputs = function(&inputs)?;
        let raws: Vec<ffi::mlx_array> = outputs.iter().map(Array::as_raw).collect();
        // SAFETY: `res` points to the vector handle mlx-c made for the results (null until
        // set), which this call fills with references of its own to the arrays of `raws`: one
        // Vec's own pointer and length, whose handles belong to `outputs`, live for the call.
        check("compiled function output", || unsafe { api().mlx_vector_array_set_data(res, raws.as_ptr(), raws.len()) })
    }));
    let error = match outcome {
        Ok(Ok(())) => return 0,
        Ok(Err(e)) => e,
        Err(_) => Error::Mlx {
            op: "compiled function",
            message: "the traced function panicked".into(),
            location: Location::caller(),
        },
    };
    TRACE_ERROR.with(|slot| *slot.borrow_mut() = Some(error));
    1
}

/// mlx-c's payload destructor: frees the `Box<TracedFn>` of [`Compiled::new`].
unsafe extern "C" fn free_payload(payload: *mut c_void) {
    // SAFETY: mlx-c calls this once, when the last copy of the closure is released, with the
    // pointer `Compiled::new` leaked from a `Box<TracedFn>`.
    drop(unsafe { Box::from_raw(payload.cast::<TracedFn>()) });
}
