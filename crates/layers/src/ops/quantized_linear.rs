//! [`quantized_linear`]: `mlx.nn.QuantizedLinear`, optionally between gemma4's clips.

use crate::{ClipBounds, Execution, Quantization, Result};
use tensor::Array;

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
/// Every step promotes as MLX promotes. MLX's ops with either execution.
pub fn quantized_linear(
    _execution: Execution,
    x: &Array,
    w: QuantizedWeight<'_>,
    bias: Option<&Array>,
    clips: Option<&ClipBounds>,
) -> Result<Array> {
    on_mlx(x, w, bias, clips)
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
        Some(q.group_size()),
        Some(q.bits()),
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
