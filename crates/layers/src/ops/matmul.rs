//! [`matmul`]: MLX's `matmul` of two arrays.

use super::contract::refuse;
use super::dispatch::{self, HostDtype, Op, with_host_dtype};
use super::host;
use super::host_kernel::HostKernel;
use crate::{Execution, Result};
use kernels::gemm::{GemmOptions, MatRef, gemm};
use tensor::Array;

const OP: &str = "matmul";

/// `mx.matmul(a, b)` for `a` `[M, K]` or `[B, M, K]` and `b` `[K, N]` or `[B, K, N]` (a batch
/// axis on both, of one extent): `[M, N]` or `[B, M, N]` in the promoted dtype. On the host,
/// `kernels::gemm` per batch row (the operands are read contiguous, which changes no bit).
pub fn matmul(execution: Execution, a: &Array, b: &Array) -> Result<Array> {
    dispatch::run(execution, Matmul { a, b })
}

pub(super) struct Matmul<'a> {
    pub(super) a: &'a Array,
    pub(super) b: &'a Array,
}

/// The extents of a [`matmul`]: the batch (when the operands have one) and `M`, `K`, `N`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Extents {
    batch: Option<i32>,
    m: usize,
    k: usize,
    n: usize,
}

impl Op for Matmul<'_> {
    type Checked = Extents;
    /// The dtypes of `a`, `b` and the output.
    type Plan = (HostDtype, HostDtype, HostDtype);

    fn check(&self) -> Result<Extents> {
        let (a_shape, b_shape) = (self.a.shape(), self.b.shape());
        let (batch, m, k, n) = match (a_shape.as_slice(), b_shape.as_slice()) {
            (&[m, k], &[k2, n]) if k == k2 => (None, m, k, n),
            (&[ba, m, k], &[bb, k2, n]) if ba == bb && k == k2 => (Some(ba), m, k, n),
            (x, y) => {
                return Err(refuse(
                    OP,
                    format!("operands {x:?} and {y:?} are not [B?, M, K] and [B?, K, N] of one batch"),
                ));
            }
        };
        Ok(Extents { batch, m: m as usize, k: k as usize, n: n as usize })
    }

    fn plan(&self) -> Option<Self::Plan> {
        let (a, b) = (self.a.dtype(), self.b.dtype());
        Some((HostDtype::of(a)?, HostDtype::of(b)?, HostDtype::promote(&[a, b])?))
    }

    fn kernel(&self, _: &Self::Plan) -> HostKernel {
        HostKernel::Gemm
    }

    fn on_host(&self, e: Extents, (a_dtype, b_dtype, out_dtype): Self::Plan) -> Result<Array> {
        let (m, k, n) = (e.m, e.k, e.n);
        with_host_dtype!(out_dtype, O => with_host_dtype!(a_dtype, A => with_host_dtype!(b_dtype, B => {
            let shape: Vec<i32> = e.batch.into_iter().chain([m as i32, n as i32]).collect();
            let mut out = host::output::<O>(&shape)?;
            host::with_two::<A, B, _>(self.a, self.b, |a, b| {
                for ((a, b), out) in a.chunks_exact(m * k).zip(b.chunks_exact(k * n)).zip(out.chunks_exact_mut(m * n)) {
                    gemm(MatRef::row_major(a, m, k)?, MatRef::row_major(b, k, n)?, out, &GemmOptions::default())?;
                }
                Ok(())
            })?;
            Ok(out.into_array())
        })))
    }

    fn on_mlx(&self) -> Result<Array> {
        Ok(self.a.matmul(self.b)?)
    }
}
