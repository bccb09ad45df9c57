//! The shapes of per-patch inputs: batches of patch rows, or of frames of patch rows, and the
//! leading rows each batch row keeps.

use crate::{Error, Result};
use tensor::Array;

/// `patches` `[B, L, dim]` with `positions` `[B, L, 2]`, as given; or `[B, T, L, dim]` with
/// `[B, T, L, 2]` (frames of videos), flattened to `B·T` rows as the reference reshapes them.
/// Any other pair of shapes is an [`Error::ModelInput`] naming both.
pub(crate) fn patch_rows(patches: &Array, positions: &Array, dim: i32) -> Result<(Array, Array)> {
    match (patches.shape().as_slice(), positions.shape().as_slice()) {
        ([b, l, d], [pb, pl, 2]) if *d == dim && (b, l) == (pb, pl) => Ok((patches.clone(), positions.clone())),
        ([b, t, l, d], [pb, pt, pl, 2]) if *d == dim && (b, t, l) == (pb, pt, pl) => {
            Ok((patches.reshape(&[b * t, *l, *d])?, positions.reshape(&[b * t, *l, 2])?))
        }
        (p, q) => Err(Error::ModelInput {
            input: "patches and position ids",
            expected: format!("[B, L, {dim}] (or [B, T, L, {dim}]) with position ids [B, L, 2] (or [B, T, L, 2])"),
            found: format!("{p:?} and {q:?}"),
        }),
    }
}

/// `patches` `[B, L, dim]` without positions, as given; or `[B, T, L, dim]` flattened to `B·T`
/// rows. Any other shape is an [`Error::ModelInput`].
pub(crate) fn patch_rows_alone(patches: &Array, dim: i32) -> Result<Array> {
    match patches.shape().as_slice() {
        [_, _, d] if *d == dim => Ok(patches.clone()),
        [b, t, l, d] if *d == dim => Ok(patches.reshape(&[b * t, *l, *d])?),
        p => Err(Error::ModelInput {
            input: "patches",
            expected: format!("[B, L, {dim}] (or [B, T, L, {dim}])"),
            found: format!("{p:?}"),
        }),
    }
}

/// The first `counts[b]` rows of each batch row of `x` `[B, len, D]`, concatenated to
/// `[Σ counts, D]` (the reference's per-row slicing after its `.item()` count); `[0, D]` when
/// every count is 0.
pub(crate) fn keep_leading_rows(x: &Array, counts: &[usize]) -> Result<Array> {
    let rows: Vec<Array> = counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(b, &n)| x.slice_axis(0, b as i32, b as i32 + 1)?.squeeze(&[0])?.slice_axis(0, 0, n as i32))
        .collect::<tensor::Result<_>>()?;
    if rows.is_empty() {
        let width = x.dim(-1)?;
        return Ok(x.reshape(&[-1, width])?.slice_axis(0, 0, 0)?);
    }
    let refs: Vec<&Array> = rows.iter().collect();
    Ok(Array::concatenate(&refs, 0)?)
}
