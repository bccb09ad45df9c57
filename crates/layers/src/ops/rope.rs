//! [`RopeTables`]: gemma4's multidimensional rotary position embedding.

use super::host::{self, HostFloat};
use crate::{Error, Result};
use tensor::{Array, Dtype};

/// The cosine and sine tables of mlx-vlm's `apply_multidimensional_rope` for one set of
/// positions, built once (per patch grid) and applied to the queries and keys of every layer.
///
/// Positions are `[B, L, n]` (integer ids, one per spatial axis: for gemma4 `n = 2`, `(x, y)`
/// = (column, row)) or `[B, L]` (the reference's 1-D fallback). With `n` axes, a head of `D`
/// channels is split into `n` partitions of `c = 2·(D // 2n)` channels (`D = 64`: 32), the
/// partition `d` rotated by the positions of axis `d`; rotate-half works within a partition,
/// never across. The 1-D fallback rotates the whole head (`c = D`) by the single position.
///
/// Per partition, built with MLX ops in the reference's order:
///
/// ```text
/// e  = (2.0 / c) * arange(0, c/2).astype(f32)          # weak f32 scalar
/// ts = power(f32(theta), e)
/// a  = positions[..., d:d+1].astype(f32) / ts          # 1-D: positions[..., None]
/// cos = expand_dims(concatenate([cos(a), cos(a)], -1).astype(dtype), 2)    # [B, L, 1, c]
/// sin = expand_dims(concatenate([sin(a), sin(a)], -1).astype(dtype), 2)
/// ```
///
/// and applied as `u * cos + rotate_half(u) * sin` on each partition `u = x[..., d·c:(d+1)·c]`,
/// the partitions concatenated back (1-D: on the whole head, no slicing). The tables are the
/// reference's bits for their dtype; [`apply`](RopeTables::apply) to an input of another dtype
/// casts the float32 tables to it, exactly as the reference would have.
#[derive(Debug, Clone)]
pub struct RopeTables {
    head_dim: i32,
    /// Channels per partition (`D` for the 1-D fallback).
    channels: i32,
    /// Whether positions were `[B, L]` (whole-head rotation, no partitions).
    one_dimensional: bool,
    dtype: Dtype,
    parts: Vec<Part>,
}

/// [`RopeTables`] on the host in `T`: per partition, `cos` and `sin` `[batch · L, channels]`.
#[derive(Debug)]
pub(crate) struct HostRopeTables<T> {
    channels: usize,
    parts: Vec<(Vec<T>, Vec<T>)>,
}

impl<T: HostFloat> HostRopeTables<T> {
    /// The partitions as `kernels::rope` takes them.
    pub(crate) fn parts(&self) -> Result<Vec<kernels::rope::RopePartition<'_, T>>> {
        self.parts.iter().map(|(cos, sin)| Ok(kernels::rope::RopePartition::new(cos, sin, self.channels)?)).collect()
    }
}

#[derive(Debug, Clone)]
struct Part {
    /// `concatenate([cos a, cos a], -1)` in float32, `[B, L, c]`.
    cos_f32: Array,
    sin_f32: Array,
    /// The same cast to `dtype` and expanded at axis 2, `[B, L, 1, c]`.
    cos: Array,
    sin: Array,
}

impl RopeTables {
    /// Tables for `positions` (`[B, L, n]` or `[B, L]`, any integer or float dtype), heads of
    /// `head_dim` channels, base frequency `theta` (gemma4: `rope_theta`, 100), cast to `dtype`
    /// (the dtype of the queries and keys they will rotate).
    ///
    /// Fails with [`Error::Config`] when `head_dim` is not a multiple of `2n` (the reference
    /// would silently drop the remainder channels) and [`Error::Input`] for positions of
    /// another rank.
    pub fn new(positions: &Array, head_dim: i32, theta: f64, dtype: Dtype) -> Result<RopeTables> {
        let shape = positions.shape();
        let (one_dimensional, axes) = match shape.as_slice() {
            [_, _] => (true, 1),
            [_, _, n] => (false, *n),
            other => {
                return Err(Error::Input {
                    block: "rope",
                    what: format!("positions must be [B, L, n] or [B, L], found {other:?}"),
                });
            }
        };
        if axes < 1 || head_dim <= 0 || head_dim % (2 * axes) != 0 {
            return Err(Error::Config {
                block: "rope",
                what: format!("head_dim {head_dim} is not a positive multiple of 2 × {axes} position axes"),
            });
        }
        let channels = if one_dimensional { head_dim } else { 2 * (head_dim / (2 * axes)) };
        let parts = (0..axes)
            .map(|d| {
                let angle_positions =
                    if one_dimensional { positions.expand_dims(-1)? } else { positions.slice_axis(-1, d, d + 1)? };
                Part::new(&angle_positions, channels, theta, dtype)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RopeTables { head_dim, channels, one_dimensional, dtype, parts })
    }

    /// Channels per head these tables rotate.
    pub fn head_dim(&self) -> i32 {
        self.head_dim
    }

    /// The dtype the tables were cast to.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The cosine table of partition `d`, `[B, L, 1, c]` in [`dtype`](RopeTables::dtype).
    pub fn cos(&self, d: usize) -> Option<&Array> {
        self.parts.get(d).map(|p| &p.cos)
    }

    /// The sine table of partition `d`, `[B, L, 1, c]` in [`dtype`](RopeTables::dtype).
    pub fn sin(&self, d: usize) -> Option<&Array> {
        self.parts.get(d).map(|p| &p.sin)
    }

    /// The tables in `T` on the host for a batch of `batch` rows (tables of one batch row are
    /// repeated, as MLX broadcasts them), exactly as [`apply`](Self::apply) would cast them.
    pub(crate) fn host_tables<T: HostFloat>(&self, batch: usize) -> Result<HostRopeTables<T>> {
        let dtype = <T as tensor::Element>::DTYPE;
        let parts = self
            .parts
            .iter()
            .map(|part| {
                let (cos, sin) = part.tables_for(dtype, self.dtype)?;
                let read = |table: Array| -> Result<Vec<T>> {
                    let dims = table.shape();
                    let rows = [batch as i32, dims[1], dims[2], dims[3]];
                    host::to_host::<T>(&table.broadcast_to(&rows)?)
                };
                Ok((read(cos)?, read(sin)?))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(HostRopeTables { channels: self.channels as usize, parts })
    }

    /// [`Error::Input`] unless `x` is `[B, L, N, head_dim]`, the input these tables rotate.
    pub(crate) fn check_input(&self, x: &Array) -> Result<()> {
        let shape = x.shape();
        if shape.len() != 4 || shape[3] != self.head_dim {
            return Err(Error::Input {
                block: "rope",
                what: format!("input must be [B, L, N, {}], found {shape:?}", self.head_dim),
            });
        }
        Ok(())
    }

    /// Rotates `x` `[B, L, N, head_dim]` (N heads), as `apply_multidimensional_rope`.
    pub fn apply(&self, x: &Array) -> Result<Array> {
        self.check_input(x)?;
        if self.one_dimensional {
            let part = &self.parts[0];
            let (cos, sin) = part.tables_for(x.dtype(), self.dtype)?;
            return rotate(x, &cos, &sin);
        }
        let rotated = self
            .parts
            .iter()
            .zip(0..)
            .map(|(part, d)| {
                let u = x.slice_axis(-1, d * self.channels, (d + 1) * self.channels)?;
                let (cos, sin) = part.tables_for(x.dtype(), self.dtype)?;
                rotate(&u, &cos, &sin)
            })
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Array> = rotated.iter().collect();
        Ok(Array::concatenate(&refs, -1)?)
    }
}

impl Part {
    /// Tables for one partition of `channels` channels from `positions` `[B, L, 1]`.
    fn new(positions: &Array, channels: i32, theta: f64, dtype: Dtype) -> Result<Part> {
        let half = channels / 2;
        let exponents =
            Array::arange(0.0, f64::from(half), 1.0, Dtype::I32)?.astype(Dtype::F32)?.mul(2.0 / f64::from(channels))?;
        let timescale = Array::scalar(theta as f32)?.power(&exponents)?;
        let angles = positions.astype(Dtype::F32)?.div(&timescale)?;
        let (cos, sin) = (angles.cos()?, angles.sin()?);
        let cos_f32 = Array::concatenate(&[&cos, &cos], -1)?;
        let sin_f32 = Array::concatenate(&[&sin, &sin], -1)?;
        let cos = cos_f32.astype(dtype)?.expand_dims(2)?;
        let sin = sin_f32.astype(dtype)?.expand_dims(2)?;
        Ok(Part { cos_f32, sin_f32, cos, sin })
    }

    /// The tables in `dtype`: the cached ones, or the float32 ones cast as the reference casts.
    fn tables_for(&self, dtype: Dtype, cached: Dtype) -> Result<(Array, Array)> {
        if dtype == cached {
            return Ok((self.cos.clone(), self.sin.clone()));
        }
        Ok((self.cos_f32.astype(dtype)?.expand_dims(2)?, self.sin_f32.astype(dtype)?.expand_dims(2)?))
    }
}

/// `u * cos + rotate_half(u) * sin`.
fn rotate(u: &Array, cos: &Array, sin: &Array) -> Result<Array> {
    Ok(u.mul(cos)?.add(&rotate_half(u)?.mul(sin)?)?)
}

/// `concatenate([-x[..., h:], x[..., :h]], -1)` with `h = x.shape[-1] // 2`, as mlx-vlm's
/// `rope_utils.rotate_half`.
pub fn rotate_half(x: &Array) -> Result<Array> {
    let last = x.dim(-1)?;
    let half = last / 2;
    let x1 = x.slice_axis(-1, 0, half)?;
    let x2 = x.slice_axis(-1, half, last)?;
    Ok(Array::concatenate(&[&x2.neg()?, &x1], -1)?)
}
