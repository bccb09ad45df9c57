//! Comparisons, logic and selection. Comparisons return bool arrays.

use super::{binary_ops, unary_ops};
use crate::status::api;
use crate::{Array, Operand, Result};

binary_ops! {
    /// `self == other`.
    eq => mlx_equal;
    /// `self != other`.
    ne => mlx_not_equal;
    /// `self > other`.
    gt => mlx_greater;
    /// `self < other`.
    lt => mlx_less;
    /// Logical and of two bool arrays.
    logical_and => mlx_logical_and;
    /// Logical or of two bool arrays.
    logical_or => mlx_logical_or;
}

unary_ops! {
    /// Logical not.
    logical_not => mlx_logical_not;
}

impl Array {
    /// `where(self, x, y)`: picks `x` where `self` is true, else `y`. Scalars take the dtype
    /// of the array among `x` and `y`, as in MLX's Python `mx.where`.
    #[track_caller]
    pub fn select(&self, x: impl Operand, y: impl Operand) -> Result<Array> {
        let (x, y) = if x.is_weak() && !y.is_weak() {
            let y = y.into_operand(self)?;
            (x.into_operand(&y)?, y)
        } else {
            let x = x.into_operand(self)?;
            let y = y.into_operand(&x)?;
            (x, y)
        };
        let stream = crate::device::current_stream()?;
        // SAFETY: the op-call contract of `Array::from_op`: the live `self`, `x` and `y` (owned
        // here) and this thread's `stream`.
        Array::from_op("where", |out| unsafe { api().mlx_where(out, self.as_raw(), x.as_raw(), y.as_raw(), stream) })
    }
}
