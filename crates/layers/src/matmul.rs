//! [`matmul`]: MLX's `matmul` of two arrays, on MLX or on the host.

use crate::host::{self, is_host_float, promote, with_host_float};
use crate::{Error, Execution, Result};
use kernels::gemm::{GemmOptions, MatRef, gemm};
use tensor::Array;

/// `mx.matmul(a, b)` for `a` `[M, K]` or `[B, M, K]` and `b` `[K, N]` or `[B, K, N]` (a batch
/// axis on both, of one extent): `[M, N]` or `[B, M, N]` in the promoted dtype. With
/// [`Execution::Host`] and float32 or bf16 operands it runs `kernels::gemm` per batch row
/// (MLX's CPU bits; the operands are read contiguous, which changes no bit); otherwise MLX's
/// `matmul`.
pub fn matmul(a: &Array, b: &Array, execution: Execution) -> Result<Array> {
    let host_dtypes = is_host_float(a.dtype()) && is_host_float(b.dtype());
    if execution != Execution::Host || !host_dtypes {
        return Ok(a.matmul(b)?);
    }
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
    let out_dtype = promote(a.dtype(), b.dtype());
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
        host::record("gemm");
        let shape: Vec<i32> = batch.into_iter().chain([m as i32, n as i32]).collect();
        host::from_host(out, &shape)
    })));
    out.flatten().flatten().ok_or_else(|| host::unsupported("matmul", &[a.dtype(), b.dtype()]))?
}
