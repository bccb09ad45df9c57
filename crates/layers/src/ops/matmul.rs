//! [`matmul`]: MLX's `matmul` of two arrays.

use crate::host::{self, host_dtype, with_host_float};
use crate::{Error, Execution, HostKernel, Result, host_kernel};
use kernels::gemm::{GemmOptions, MatRef, gemm};
use tensor::Array;

/// `mx.matmul(a, b)` for `a` `[M, K]` or `[B, M, K]` and `b` `[K, N]` or `[B, K, N]` (a batch
/// axis on both, of one extent): `[M, N]` or `[B, M, N]` in the promoted dtype. On the host,
/// `kernels::gemm` per batch row (the operands are read contiguous, which changes no bit).
pub fn matmul(execution: Execution, a: &Array, b: &Array) -> Result<Array> {
    let Some(out_dtype) = host_dtype(execution, &[a.dtype(), b.dtype()]) else {
        return Ok(a.matmul(b)?);
    };
    let (a_shape, b_shape) = (a.shape(), b.shape());
    let (batch, m, k, n) = match (a_shape.as_slice(), b_shape.as_slice()) {
        (&[m, k], &[k2, n]) if k == k2 => (None, m, k, n),
        (&[ba, m, k], &[bb, k2, n]) if ba == bb && k == k2 => (Some(ba), m, k, n),
        (x, y) => {
            return Err(Error::Input {
                block: "matmul",
                what: format!("operands {x:?} and {y:?} are not [B?, M, K] and [B?, K, N] of one batch"),
            });
        }
    };
    let rows = batch.unwrap_or(1) as usize;
    let (m, k, n) = (m as usize, k as usize, n as usize);
    let out = with_host_float!(out_dtype, O => with_host_float!(a.dtype(), A => with_host_float!(b.dtype(), B => {
        let mut out = host::output::<O>(rows * m * n);
        host::with_two::<A, B, _>(a, b, |a, b| {
            for ((a, b), out) in a.chunks_exact(m * k).zip(b.chunks_exact(k * n)).zip(out.chunks_exact_mut(m * n)) {
                gemm(MatRef::row_major(a, m, k)?, MatRef::row_major(b, k, n)?, out, &GemmOptions::default())?;
            }
            Ok(())
        })?;
        host_kernel::record(HostKernel::Gemm);
        let shape: Vec<i32> = batch.into_iter().chain([m as i32, n as i32]).collect();
        host::from_host(out, &shape)
    })));
    out.flatten().flatten().ok_or_else(|| Error::Input {
        block: "matmul",
        what: format!("the host kernels do not take dtypes {} and {}", a.dtype(), b.dtype()),
    })?
}
