//! [`contract_tokens`]: `einsum("bLl,bLd->bld")`.

use super::contract::refuse;
use super::dispatch::{self, Op};
use super::host_kernel::HostKernel;
use super::matmul::{Extents, Matmul};
use crate::{Execution, Result};
use tensor::Array;

const OP: &str = "contract tokens";

/// `mx.einsum("bLl,bLd->bld", w, h)` for `w` `[B, L, l]` and `h` `[B, L, D]`: `[B, l, D]`, each
/// output a sum over the `L` tokens (a weighted pooling). MLX's einsum contracts the shared axis
/// by `matmul(transpose(w, (0, 2, 1)), h)` (its `batch_tensordot`), so on the host this is
/// [`matmul`](super::matmul()) of those operands.
pub fn contract_tokens(execution: Execution, w: &Array, h: &Array) -> Result<Array> {
    let (ws, hs) = (w.shape(), h.shape());
    match (ws.as_slice(), hs.as_slice()) {
        (&[b, l, _], &[b2, l2, _]) if b == b2 && l == l2 => {}
        _ => return Err(refuse(OP, format!("w {ws:?} and h {hs:?} are not [B, L, l] and [B, L, D]"))),
    }
    let w_t = w.transpose(&[0, 2, 1])?;
    dispatch::run(execution, ContractTokens { w, h, product: Matmul { a: &w_t, b: h } })
}

/// The einsum, and the matmul it is on the host.
struct ContractTokens<'a> {
    w: &'a Array,
    h: &'a Array,
    product: Matmul<'a>,
}

impl<'a> Op for ContractTokens<'a> {
    type Checked = Extents;
    type Plan = <Matmul<'a> as Op>::Plan;

    fn check(&self) -> Result<Extents> {
        self.product.check()
    }

    fn plan(&self) -> Option<Self::Plan> {
        self.product.plan()
    }

    fn kernel(&self, plan: &Self::Plan) -> HostKernel {
        self.product.kernel(plan)
    }

    fn on_host(&self, extents: Extents, plan: Self::Plan) -> Result<Array> {
        self.product.on_host(extents, plan)
    }

    fn on_mlx(&self) -> Result<Array> {
        Ok(Array::einsum("bLl,bLd->bld", &[self.w, self.h])?)
    }
}
