//! [`linear`]: `mlx.nn.Linear`, optionally between gemma4's clips.

use crate::host::{self, HostFloat, host_dtype, promote, with_host_float};
use crate::{ClipBounds, Error, Execution, HostKernel, Result, host_kernel};
use kernels::gemm::{GemmOptions, MatRef, gemm};
use tensor::Array;

/// `x Wᵀ (+ b)` for `x` `[…, in]`, `W` `[out, in]`, `b` `[out]`, with `clips` around it as
/// gemma4's `ClippableLinear` clamps:
///
/// ```text
/// x = clip(x, input_min, input_max)         # with clips
/// y = matmul(x, transpose(W))               # no bias
/// y = addmm(b, x, transpose(W))             # with a bias: one op (α = β = 1)
/// y = clip(y, output_min, output_max)       # with clips
/// ```
///
/// Every step promotes as MLX promotes (bf16 activations clipped by float32 bounds are float32
/// from there on). On the host the product is `kernels::gemm`, with the input clip fused (a clip
/// only selects values, so clipping in float32 and casting is exact) and the output clip fused
/// when it keeps the product's dtype; otherwise the output clip runs as MLX's `clip`.
pub fn linear(
    execution: Execution,
    x: &Array,
    weight: &Array,
    bias: Option<&Array>,
    clips: Option<&ClipBounds>,
) -> Result<Array> {
    let clipped = match clips {
        Some(c) => host_dtype(execution, &[x.dtype(), c.input_min.dtype(), c.input_max.dtype()]),
        None => host_dtype(execution, &[x.dtype()]),
    };
    // `matmul` and `addmm` promote the (clipped) input, the weight and the bias.
    let product = clipped.and_then(|c| promote(&[c, weight.dtype(), bias.map_or(c, |b| b.dtype())]));
    let Some(product) = product else { return on_mlx(x, weight, bias, clips) };
    let out_clip = clips.filter(|c| promote(&[product, c.output_min.dtype(), c.output_max.dtype()]) == Some(product));
    let y = with_host_float!(product, O => on_host::<O>(x, weight, bias, clips, out_clip.is_some()))
        .ok_or_else(|| unsupported(x, weight))??;
    match (clips, out_clip) {
        (Some(c), None) => Ok(y.clip(Some(&c.output_min), Some(&c.output_max))?),
        _ => Ok(y),
    }
}

/// MLX's ops, in the reference's order.
fn on_mlx(x: &Array, weight: &Array, bias: Option<&Array>, clips: Option<&ClipBounds>) -> Result<Array> {
    let x = match clips {
        Some(c) => x.clip(Some(&c.input_min), Some(&c.input_max))?,
        None => x.clone(),
    };
    let weight_t = weight.t()?;
    let y = match bias {
        Some(bias) => bias.addmm(&x, &weight_t, 1.0, 1.0)?,
        None => x.matmul(&weight_t)?,
    };
    Ok(match clips {
        Some(c) => y.clip(Some(&c.output_min), Some(&c.output_max))?,
        None => y,
    })
}

/// The host product in `O` (the promotion of every operand, checked by the caller), with the
/// input clip and, when `fuse_out_clip`, the output clip.
fn on_host<O: HostFloat>(
    x: &Array,
    weight: &Array,
    bias: Option<&Array>,
    clips: Option<&ClipBounds>,
    fuse_out_clip: bool,
) -> Result<Array> {
    let (m, k) = host::rows(x);
    let n = weight.dim(0)? as usize;
    let bias = bias.map(host::converted::<O>).transpose()?;
    let a_clip = clips.map(|c| Ok::<_, Error>((host::scalar_f32(&c.input_min)?, host::scalar_f32(&c.input_max)?)));
    let out_clip = clips.filter(|_| fuse_out_clip).map(|c| {
        Ok::<_, Error>((O::from_f32(host::scalar_f32(&c.output_min)?), O::from_f32(host::scalar_f32(&c.output_max)?)))
    });
    let options = GemmOptions { a_clip: a_clip.transpose()?, bias: bias.as_deref(), out_clip: out_clip.transpose()? };
    let mut out = host::output::<O>(m * n);
    let run = with_host_float!(x.dtype(), A => with_host_float!(weight.dtype(), B => {
        host::with_two::<A, B, _>(x, weight, |a, w| {
            Ok(gemm(MatRef::row_major(a, m, k)?, MatRef::row_major(w, n, k)?.t(), &mut out, &options)?)
        })
    }));
    run.flatten().ok_or_else(|| unsupported(x, weight))??;
    host_kernel::record(HostKernel::Gemm);
    host::from_host(out, &host::with_last(x.shape(), n))
}

/// The error of the host path reached with dtypes it does not take (checked before).
fn unsupported(x: &Array, weight: &Array) -> Error {
    Error::Input {
        block: "linear",
        what: format!("the host kernels do not take dtypes {} and {}", x.dtype(), weight.dtype()),
    }
}
