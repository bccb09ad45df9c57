//! The shape checks the ops' contracts share ([`Op::check`](super::dispatch::Op::check)): each
//! refusal names the op and the operand that breaks the contract.

use super::{ClipBounds, host};
use crate::{Error, Result};
use tensor::Array;

/// The refusal of a call of `op`.
pub(crate) fn refuse(op: &'static str, what: String) -> Error {
    Error::Input { block: op, what }
}

/// The last extent of `x` (`name`), which must have rank ≥ 1.
pub(crate) fn last_extent(op: &'static str, name: &str, x: &Array) -> Result<i32> {
    x.shape().last().copied().ok_or_else(|| refuse(op, format!("{name} is 0-d: it needs a last axis")))
}

/// `x` (`name`) must be `[extent]`.
pub(crate) fn vector(op: &'static str, name: &str, x: &Array, extent: i32) -> Result<()> {
    let shape = x.shape();
    if shape != [extent] {
        return Err(refuse(op, format!("{name} must be [{extent}], found {shape:?}")));
    }
    Ok(())
}

/// `x` (`name`) must be 0-d.
pub(crate) fn scalar(op: &'static str, name: &str, x: &Array) -> Result<()> {
    if x.ndim() != 0 {
        return Err(refuse(op, format!("{name} must be 0-d, found {:?}", x.shape())));
    }
    Ok(())
}

/// `x` and `y` (named) must have one shape.
pub(crate) fn same_shape(op: &'static str, (x_name, x): (&str, &Array), (y_name, y): (&str, &Array)) -> Result<()> {
    let (xs, ys) = (x.shape(), y.shape());
    if xs != ys {
        return Err(refuse(op, format!("{x_name} {xs:?} and {y_name} {ys:?} must have one shape")));
    }
    Ok(())
}

/// The rest of a linear op's contract once its weight gives `n` outputs: the bias `[n]`, the
/// clip bounds 0-d. The extents `(rows, in, out)` of `x` `[…, in]` as a matrix.
pub(crate) fn product_epilogue(
    op: &'static str,
    x: &Array,
    n: i32,
    bias: Option<&Array>,
    clips: Option<&ClipBounds>,
) -> Result<(usize, usize, usize)> {
    if let Some(bias) = bias {
        vector(op, "the bias", bias, n)?;
    }
    if let Some(c) = clips {
        c.check(op)?;
    }
    let (m, k) = host::rows(x);
    Ok((m, k, n as usize))
}
