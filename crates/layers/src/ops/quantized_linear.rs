//! [`quantized_linear`]: `mlx.nn.QuantizedLinear`, optionally between gemma4's clips.

use crate::host::{self, HostFloat, host_dtype, promote, with_host_float};
use crate::{ClipBounds, Error, Execution, HostKernel, Quantization, QuantizationMode, Result, host_kernel};
use kernels::gemm::{GemmOptions, MatRef};
use kernels::quantized::{FloatSlice, QuantizedMatrix, Scales, quantized_matmul};
use tensor::{Array, Dtype};

/// The packed parts of a quantized `[out, in]` weight, as `mx.quantized_matmul` takes them:
/// `weight` uint32 `[out, in · bits / 32]`, `scales` `[out, in / group]` (float for affine, uint8
/// for mxfp4, nvfp4 and mxfp8), `biases` (affine only) like the scales.
#[derive(Debug, Clone, Copy)]
pub struct QuantizedWeight<'a> {
    pub weight: &'a Array,
    pub scales: &'a Array,
    pub biases: Option<&'a Array>,
    pub quantization: Quantization,
}

/// `x Wᵀ (+ b)` for `x` `[…, in]` and a quantized `W`, with `clips` around it as gemma4's
/// `ClippableLinear` clamps:
///
/// ```text
/// x = clip(x, input_min, input_max)                                       # with clips
/// y = quantized_matmul(x, w, scales, biases, transpose=True, group_size, bits, mode)
/// y = y + b                                                               # with a bias: an add
/// y = clip(y, output_min, output_max)                                     # with clips
/// ```
///
/// Every step promotes as MLX promotes: the clipped input is the promotion of `x`'s and the
/// bounds' dtypes; `quantized_matmul` computes in and returns (affine) the promotion of that
/// with the scales' and biases' dtypes, (fp modes) the clipped input's dtype; the add and the
/// output clip promote again.
///
/// On the host the product is `kernels::quantized::quantized_matmul`, with the input clip fused
/// (a clip only selects values, and the product's dtype holds every clipped value exactly), the
/// bias add fused when it keeps the product's dtype (the kernel adds in the product's dtype, as
/// MLX's `add` of two arrays of that dtype does), and the output clip fused when the add was and
/// the clip keeps the dtype too. An add or clip that promotes (a float32 bias or bounds after a
/// bf16 product) runs as MLX's op on the host product.
pub fn quantized_linear(
    execution: Execution,
    x: &Array,
    w: QuantizedWeight<'_>,
    bias: Option<&Array>,
    clips: Option<&ClipBounds>,
) -> Result<Array> {
    let Some(product) = host_product_dtype(execution, x, &w, clips) else {
        return on_mlx(x, w, bias, clips);
    };
    let fuse_bias = match bias {
        Some(b) => promote(&[product, b.dtype()]) == Some(product),
        None => true,
    };
    let fuse_out_clip = fuse_bias
        && clips.is_none_or(|c| promote(&[product, c.output_min.dtype(), c.output_max.dtype()]) == Some(product));
    let fused = Fused { bias: bias.filter(|_| fuse_bias), clips, out_clip: fuse_out_clip };
    let y = with_host_float!(product, O => on_host::<O>(x, w, fused)).ok_or_else(|| unsupported(x, &w))??;
    let y = match bias {
        Some(b) if !fuse_bias => y.add(b)?,
        _ => y,
    };
    match clips {
        Some(c) if !fuse_out_clip => Ok(y.clip(Some(&c.output_min), Some(&c.output_max))?),
        _ => Ok(y),
    }
}

/// MLX's ops, in the reference's order.
fn on_mlx(x: &Array, w: QuantizedWeight<'_>, bias: Option<&Array>, clips: Option<&ClipBounds>) -> Result<Array> {
    let x = match clips {
        Some(c) => x.clip(Some(&c.input_min), Some(&c.input_max))?,
        None => x.clone(),
    };
    let q = w.quantization;
    let y = x.quantized_matmul(
        w.weight,
        w.scales,
        w.biases,
        true,
        Some(q.group_size() as i32),
        Some(q.bits() as i32),
        q.mode().as_str(),
    )?;
    let y = match bias {
        Some(bias) => y.add(bias)?,
        None => y,
    };
    Ok(match clips {
        Some(c) => y.clip(Some(&c.output_min), Some(&c.output_max))?,
        None => y,
    })
}

/// The dtype `quantized_matmul` computes in for this input on the host, `None` when the op runs
/// on MLX (another execution, or an operand the host kernels do not take).
fn host_product_dtype(
    execution: Execution,
    x: &Array,
    w: &QuantizedWeight<'_>,
    clips: Option<&ClipBounds>,
) -> Option<Dtype> {
    let mut dtypes = vec![x.dtype()];
    if let Some(c) = clips {
        dtypes.extend([c.input_min.dtype(), c.input_max.dtype(), c.output_min.dtype(), c.output_max.dtype()]);
    }
    host_dtype(execution, &dtypes)?;
    let clipped = match clips {
        Some(c) => promote(&[x.dtype(), c.input_min.dtype(), c.input_max.dtype()])?,
        None => x.dtype(),
    };
    if w.weight.dtype() != Dtype::U32 {
        return None;
    }
    match (w.quantization.mode(), w.biases) {
        (QuantizationMode::Affine, Some(biases)) => promote(&[clipped, w.scales.dtype(), biases.dtype()]),
        (QuantizationMode::Affine, None) => None,
        _ => (w.scales.dtype() == Dtype::U8).then_some(clipped),
    }
}

/// What the host product fuses: the bias add, the input clip, and (when `out_clip`) the output
/// clip.
#[derive(Debug, Clone, Copy)]
struct Fused<'a> {
    bias: Option<&'a Array>,
    clips: Option<&'a ClipBounds>,
    out_clip: bool,
}

/// The host product in `O` (the product's dtype, checked by the caller).
fn on_host<O: HostFloat>(x: &Array, w: QuantizedWeight<'_>, fused: Fused<'_>) -> Result<Array> {
    let (m, k) = host::rows(x);
    let n = w.weight.dim(0)? as usize;
    let bias = fused.bias.map(host::converted::<O>).transpose()?;
    let a_clip =
        fused.clips.map(|c| Ok::<_, Error>((host::scalar_f32(&c.input_min)?, host::scalar_f32(&c.input_max)?)));
    let out_clip = fused.clips.filter(|_| fused.out_clip).map(|c| {
        Ok::<_, Error>((O::from_f32(host::scalar_f32(&c.output_min)?), O::from_f32(host::scalar_f32(&c.output_max)?)))
    });
    let options = GemmOptions { a_clip: a_clip.transpose()?, bias: bias.as_deref(), out_clip: out_clip.transpose()? };
    let mut out = host::output::<O>(m * n);
    let run = with_host_float!(x.dtype(), X => {
        host::with_host::<u32, _>(w.weight, |packed| {
            with_scales(&w, |scales| {
                let matrix = QuantizedMatrix::new(packed, scales, w.quantization, n, k)?;
                host::with_host::<X, _>(x, |x| -> Result<()> {
                    Ok(quantized_matmul(MatRef::row_major(x, m, k)?, &matrix, &mut out, &options)?)
                })?
            })
        })
    });
    run.ok_or_else(|| unsupported(x, &w))???;
    host_kernel::record(HostKernel::QuantizedMatmul);
    host::from_host(out, &host::with_last(x.shape(), n))
}

/// Calls `f` with the scales (and affine biases) as the kernel takes them.
fn with_scales<R>(w: &QuantizedWeight<'_>, f: impl FnOnce(Scales<'_>) -> Result<R>) -> Result<R> {
    match w.biases {
        None => host::with_host::<u8, _>(w.scales, |scales| f(Scales::Fp(scales)))?,
        Some(biases) => with_float_slice(w.scales, |scales| {
            with_float_slice(biases, |biases| f(Scales::Affine { scales, biases }))
        })??,
    }
}

/// Calls `f` with `x`'s elements as a [`FloatSlice`] of its dtype (float32 or bf16).
fn with_float_slice<R>(x: &Array, f: impl FnOnce(FloatSlice<'_>) -> R) -> Result<R> {
    match x.dtype() {
        Dtype::F32 => host::with_host::<f32, _>(x, |v| f(FloatSlice::F32(v))),
        Dtype::Bf16 => host::with_host::<half::bf16, _>(x, |v| f(FloatSlice::Bf16(v))),
        other => Err(Error::Input {
            block: "quantized linear",
            what: format!("the host kernels do not take {other} scales"),
        }),
    }
}

/// The error of the host path reached with dtypes it does not take (checked before).
fn unsupported(x: &Array, w: &QuantizedWeight<'_>) -> Error {
    Error::Input {
        block: "quantized linear",
        what: format!("the host kernels do not take {} input with {} scales", x.dtype(), w.scales.dtype()),
    }
}
