//! [`contract_tokens`]: `einsum("bLl,bLd->bld", w, h)`.

use crate::{Execution, Result, ops};
use tensor::Array;

/// `mx.einsum("bLl,bLd->bld", w, h)` for `w` `[B, L, l]` and `h` `[B, L, D]`: `[B, l, D]`, each
/// output a sum over the `L` tokens (a weighted pooling). MLX's einsum contracts the shared axis
/// by `matmul(transpose(w, (0, 2, 1)), h)` (its `batch_tensordot`), so on the host this is
/// [`ops::matmul`](crate::ops::matmul) of those operands.
pub fn contract_tokens(execution: Execution, w: &Array, h: &Array) -> Result<Array> {
    match execution {
        Execution::Mlx => Ok(Array::einsum("bLl,bLd->bld", &[w, h])?),
        Execution::Host => ops::matmul(execution, &w.transpose(&[0, 2, 1])?, h),
    }
}
