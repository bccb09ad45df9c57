//! [`vision_rms_norm`]: gemma4's float32 RMS normalisation of attention heads, optionally
//! followed by RoPE.

use crate::host::{self, HostFloat, host_dtype, with_host_float};
use crate::vision_rms_norm::VISION_RMS_NORM_EPS;
use crate::{Error, Execution, HostKernel, Result, RopeTables, host_kernel};
use tensor::{Array, Dtype};

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
    if let Some(rope) = rope {
        rope.check_input(x)?;
    }
    let mut dtypes = vec![x.dtype()];
    dtypes.extend(weight.map(|w| w.dtype()));
    if host_dtype(execution, &dtypes).is_some()
        && let Some(y) = with_host_float!(x.dtype(), T => on_host::<T>(x, weight, rope))
    {
        return y;
    }
    on_mlx(x, weight, rope)
}

/// MLX's ops, in the reference's order.
fn on_mlx(x: &Array, weight: Option<&Array>, rope: Option<&RopeTables>) -> Result<Array> {
    let f = x.astype(Dtype::F32)?;
    let var = f.power(2)?.mean(&[-1], true)?;
    let normed = f.mul(&var.add(VISION_RMS_NORM_EPS)?.rsqrt()?)?;
    let scaled = match weight {
        Some(weight) => normed.mul(&weight.astype(Dtype::F32)?)?,
        None => normed,
    };
    let y = scaled.astype(x.dtype())?;
    match rope {
        Some(rope) => rope.apply(&y),
        None => Ok(y),
    }
}

/// The host pass in `T` (`x`'s dtype; the weight's is a host float, checked by the caller).
fn on_host<T: HostFloat>(x: &Array, weight: Option<&Array>, rope: Option<&RopeTables>) -> Result<Array> {
    let (_, dim) = host::rows(x);
    let shape = x.shape();
    let tables = rope.map(|r| r.host_tables::<T>(shape[0] as usize)).transpose()?;
    let parts = tables.as_ref().map(|t| t.parts()).transpose()?;
    // Heads per token: RoPE rotates every head of a token by that token's angles.
    let heads = if rope.is_some() { shape[2] as usize } else { 1 };
    let eps = VISION_RMS_NORM_EPS as f32;
    let mut values = host::to_host::<T>(x)?;
    let run = match weight {
        Some(w) => with_host_float!(w.dtype(), W => {
            let weight = host::to_host::<W>(w)?;
            kernels::vision_rms_norm::normalize_heads(&mut values, heads, dim, Some(&weight), eps, parts.as_deref())
        }),
        None => Some(kernels::vision_rms_norm::normalize_heads::<T, f32>(
            &mut values,
            heads,
            dim,
            None,
            eps,
            parts.as_deref(),
        )),
    };
    run.ok_or_else(|| Error::Input {
        block: "vision rms norm",
        what: format!("the host kernels do not take dtypes {} and {:?}", x.dtype(), weight.map(|w| w.dtype())),
    })??;
    host_kernel::record(if rope.is_some() { HostKernel::VisionRmsNormRope } else { HostKernel::VisionRmsNorm });
    host::from_host(values, &shape)
}
