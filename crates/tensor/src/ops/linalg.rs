//! Matrix products.

use crate::status::api;
use crate::vector::VectorArray;
use crate::{Array, Result};
use std::ffi::CString;

impl Array {
    /// Matrix product with batch broadcasting (`self @ other`). Float32 products on the CPU
    /// go through the linked BLAS; other float types through MLX's own kernel.
    #[track_caller]
    pub fn matmul(&self, other: &Array) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self` and `other`, and this
        // thread's `stream`.
        Array::from_op("matmul", |out| unsafe { api().mlx_matmul(out, self.as_raw(), other.as_raw(), stream) })
    }

    /// `beta * self + alpha * (a @ b)` as one fused op (MLX `addmm`, `self` being the addend).
    /// Not bit-identical to `matmul` followed by `add` in low precision.
    #[track_caller]
    pub fn addmm(&self, a: &Array, b: &Array, alpha: f32, beta: f32) -> Result<Array> {
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self`, `a` and `b`, and this
        // thread's `stream`.
        Array::from_op("addmm", |out| unsafe {
            api().mlx_addmm(out, self.as_raw(), a.as_raw(), b.as_raw(), alpha, beta, stream)
        })
    }

    /// Einstein summation over `operands` (MLX `einsum`).
    #[track_caller]
    pub fn einsum(subscripts: &str, operands: &[&Array]) -> Result<Array> {
        let subscripts = CString::new(subscripts)
            .map_err(|_| crate::Error::Shape { op: "einsum", detail: "subscripts contain a NUL byte".into() })?;
        let vector = VectorArray::new(operands)?;
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the `CString` `subscripts`, the live
        // `vector` of operands, and this thread's `stream`.
        Array::from_op("einsum", |out| unsafe { api().mlx_einsum(out, subscripts.as_ptr(), vector.raw(), stream) })
    }
}
