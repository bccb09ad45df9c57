//! [`RightOperand`]: the right operand `b` (`K × N`) as the driver reads it, one packed panel of
//! `NR` columns at a time: a dense [`MatRef`] ([`Dense`]), or a matrix that is dequantized while
//! it is packed (`quantized`).

use super::matrix::MatRef;
use super::pack::pack_b_panel;
use crate::cpu::Isa;
use crate::{ElementType, Float};
use std::marker::PhantomData;

/// A product's right operand, `K × N`, as the driver packs it. Every packed value is the value
/// the product multiplies (in the product's dtype, widened to `f32` exactly).
pub(crate) trait RightOperand: Sync {
    /// Packs columns `j0..j0 + cols` (`cols ≤ NR`), all of k, into `dst` (`K · NR` values,
    /// `dst[k · NR + c]`), columns past `cols` zero, with the vector code of `isa` where it has
    /// some (the same values).
    fn pack_panel(&self, j0: usize, cols: usize, dst: &mut [f32], isa: Isa);

    /// Whether every packed value is a bf16 value (then an FMA may give the separate multiply
    /// and add's bits, see [`magnitudes`](super::magnitudes)).
    fn bf16_values(&self) -> bool;

    /// The k-sum's groups ([`groups`](super::groups)): `Some(group)` when the sum restarts every
    /// `group` k steps and each group's sum joins the accumulator scaled by a factor per
    /// column and group (`K` is then a multiple of `group`); `None` for one sum over all of k.
    fn group(&self) -> Option<usize> {
        None
    }

    /// With [`RightOperand::group`], packs the factors of columns `j0..j0 + cols` (`cols ≤ NR`)
    /// into `dst` (`K / group · NR` values, `dst[g · NR + c]`), columns past `cols` zero.
    fn pack_group_scales(&self, j0: usize, cols: usize, dst: &mut [f32]) {
        let _ = (j0, cols);
        dst.fill(0.0);
    }
}

/// A dense `b` whose values the product casts to `O` (MLX casts matmul operands to the result
/// dtype).
pub(crate) struct Dense<'a, B, O> {
    b: MatRef<'a, B>,
    out: PhantomData<fn() -> O>,
}

impl<'a, B, O> Dense<'a, B, O> {
    pub(crate) fn new(b: MatRef<'a, B>) -> Self {
        Dense { b, out: PhantomData }
    }
}

impl<B: Float, O: Float> RightOperand for Dense<'_, B, O> {
    fn pack_panel(&self, j0: usize, cols: usize, dst: &mut [f32], isa: Isa) {
        pack_b_panel::<B, O>(&self.b, j0, cols, dst, isa);
    }

    fn bf16_values(&self) -> bool {
        O::DTYPE == ElementType::Bf16 || B::DTYPE == ElementType::Bf16
    }
}
