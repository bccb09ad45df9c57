//! [`vision_rms_norm`]: gemma4's float32 RMS normalisation of attention heads, optionally
//! followed by RoPE.

use super::dispatch::{self, HostDtype, Op, with_host_dtype};
use super::host::{self, HostFloat};
use super::host_kernel::HostKernel;
use super::{RopeTables, contract};
use crate::{Execution, Result};
use tensor::{Array, Dtype};

const OP: &str = "vision rms norm";

/// The epsilon of the reference's `VisionRMSNorm`: its constructor default, never the config's.
pub const VISION_RMS_NORM_EPS: f64 = 1e-6;

/// mlx-vlm's `VisionRMSNorm` (with `weight` `[dim]`) or `VisionRMSNormNoScale` (without) over
/// the last axis of `x` `[…, dim]`, then, with `rope`, `apply_multidimensional_rope` by its
/// tables (`x` then `[B, L, heads, head_dim]`):
///
/// ```text
/// f = x.astype(f32)
/// var = mean(power(f, 2), -1, keepdims)      # power, not square
/// y = f * rsqrt(var + 1e-6)                  # eps as an f32 weak scalar
/// y = y * weight.astype(f32)                 # only with a weight: scaled in f32, before the cast
/// y = y.astype(x.dtype)
/// y = rope.apply(y)                          # with rope (RopeTables::apply)
/// ```
///
/// The output has `x`'s dtype. On the host, `kernels::vision_rms_norm::normalize_heads`: both
/// steps in one pass over memory, with MLX's bits.
pub fn vision_rms_norm(
    execution: Execution,
    x: &Array,
    weight: Option<&Array>,
    rope: Option<&RopeTables>,
) -> Result<Array> {
    dispatch::run(execution, VisionRmsNorm { x, weight, rope })
}

struct VisionRmsNorm<'a> {
    x: &'a Array,
    weight: Option<&'a Array>,
    rope: Option<&'a RopeTables>,
}

impl Op for VisionRmsNorm<'_> {
    type Checked = usize;
    /// The dtypes of `x` and of the weight.
    type Plan = (HostDtype, Option<HostDtype>);

    fn check(&self) -> Result<usize> {
        let dim = contract::last_extent(OP, "x", self.x)?;
        if let Some(weight) = self.weight {
            contract::vector(OP, "the weight", weight, dim)?;
        }
        if let Some(rope) = self.rope {
            rope.check_input(self.x)?;
        }
        Ok(dim as usize)
    }

    fn plan(&self) -> Option<Self::Plan> {
        let weight = match self.weight {
            Some(w) => Some(HostDtype::of(w.dtype())?),
            None => None,
        };
        Some((HostDtype::of(self.x.dtype())?, weight))
    }

    fn kernel(&self, _: &Self::Plan) -> HostKernel {
        if self.rope.is_some() { HostKernel::VisionRmsNormRope } else { HostKernel::VisionRmsNorm }
    }

    fn on_host(&self, dim: usize, (x_dtype, weight_dtype): Self::Plan) -> Result<Array> {
        with_host_dtype!(x_dtype, T => self.normalize::<T>(dim, weight_dtype))
    }

    fn on_mlx(&self) -> Result<Array> {
        let f = self.x.astype(Dtype::F32)?;
        let var = f.power(2)?.mean(&[-1], true)?;
        let normed = f.mul(&var.add(VISION_RMS_NORM_EPS)?.rsqrt()?)?;
        let scaled = match self.weight {
            Some(weight) => normed.mul(&weight.astype(Dtype::F32)?)?,
            None => normed,
        };
        let y = scaled.astype(self.x.dtype())?;
        match self.rope {
            Some(rope) => rope.apply(&y),
            None => Ok(y),
        }
    }
}

impl VisionRmsNorm<'_> {
    /// The host pass in `T` (`x`'s dtype), the weight read in its own dtype.
    fn normalize<T: HostFloat>(&self, dim: usize, weight_dtype: Option<HostDtype>) -> Result<Array> {
        let shape = self.x.shape();
        let tables = self.rope.map(|r| r.host_tables::<T>(shape[0] as usize)).transpose()?;
        let parts = tables.as_ref().map(|t| t.parts()).transpose()?;
        // Heads per token: RoPE rotates every head of a token by that token's angles.
        let heads = if self.rope.is_some() { shape[2] as usize } else { 1 };
        let eps = VISION_RMS_NORM_EPS as f32;
        let mut values = host::output_copy::<T>(self.x)?;
        match self.weight.zip(weight_dtype) {
            Some((w, dtype)) => with_host_dtype!(dtype, W => {
                let weight = host::to_host::<W>(w)?;
                kernels::vision_rms_norm::normalize_heads(&mut values, heads, dim, Some(&weight), eps, parts.as_deref())
            }),
            None => kernels::vision_rms_norm::normalize_heads::<T, f32>(
                &mut values,
                heads,
                dim,
                None,
                eps,
                parts.as_deref(),
            ),
        }?;
        Ok(values.into_array())
    }
}
