//! [`quantized_linear`]: `mlx.nn.QuantizedLinear`, optionally between gemma4's clips.

use super::dispatch::{self, HostDtype, Op, with_host_dtype};
use super::host::{self, HostFloat};
use super::host_kernel::HostKernel;
use super::{ClipBounds, contract};
use crate::{Execution, Result};
use kernels::gemm::{GemmOptions, MatRef};
use kernels::quantized::{FloatSlice, Quantization, QuantizationMode, QuantizedMatrix, Scales, quantized_matmul};
use tensor::{Array, Dtype};

const OP: &str = "quantized linear";

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

/// `x Wᵀ (+ b)` for `x` `[…, in]` and a quantized `W` (`[out, in]`, its parts as
/// [`QuantizedWeight`] says), `b` `[out]`, with `clips` (0-d bounds) around it as gemma4's
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
    dispatch::run(execution, QuantizedLinear { x, w, bias, clips })
}

struct QuantizedLinear<'a> {
    x: &'a Array,
    w: QuantizedWeight<'a>,
    bias: Option<&'a Array>,
    clips: Option<&'a ClipBounds>,
}

/// The host product's dtypes, and what it fuses.
#[derive(Debug, Clone, Copy)]
struct Plan {
    x: HostDtype,
    /// The scales' (and biases') dtype, affine only.
    affine: Option<(HostDtype, HostDtype)>,
    product: HostDtype,
    fuse_bias: bool,
    fuse_out_clip: bool,
}

impl Op for QuantizedLinear<'_> {
    /// `(rows, in, out)`.
    type Checked = (usize, usize, usize);
    type Plan = Plan;

    fn check(&self) -> Result<Self::Checked> {
        let w = &self.w;
        let k = contract::last_extent(OP, "x", self.x)?;
        let n = w.weight.dim(0).unwrap_or(0);
        let (bits, group) = (w.quantization.bits() as i64, w.quantization.group_size() as i64);
        if i64::from(k) % group != 0 {
            return Err(contract::refuse(
                OP,
                format!("x's last extent {k} is not a multiple of the group size {group}"),
            ));
        }
        let packed = [n, (i64::from(k) * bits / 32) as i32];
        let scales = [n, (i64::from(k) / group) as i32];
        let found = |a: &Array| a.shape();
        if w.weight.dtype() != Dtype::U32 || found(w.weight) != packed {
            let (dtype, shape) = (w.weight.dtype(), found(w.weight));
            return Err(contract::refuse(OP, format!("the weight must be uint32 {packed:?}, found {dtype} {shape:?}")));
        }
        if found(w.scales) != scales {
            return Err(contract::refuse(OP, format!("the scales must be {scales:?}, found {:?}", found(w.scales))));
        }
        match (w.quantization.mode().has_biases(), w.biases) {
            (true, Some(b)) if found(b) == scales => {}
            (false, None) if w.scales.dtype() == Dtype::U8 => {}
            (true, b) => {
                let b = b.map(found);
                return Err(contract::refuse(OP, format!("affine biases must be {scales:?}, found {b:?}")));
            }
            (false, b) => {
                let (mode, dtype) = (w.quantization.mode().as_str(), w.scales.dtype());
                return Err(contract::refuse(
                    OP,
                    format!("{mode} takes uint8 scales and no biases, found {dtype} scales, biases: {}", b.is_some()),
                ));
            }
        }
        contract::product_epilogue(OP, self.x, n, self.bias, self.clips)
    }

    fn plan(&self) -> Option<Plan> {
        let (x, w) = (self.x, &self.w);
        let mut dtypes = vec![x.dtype()];
        if let Some(c) = self.clips {
            dtypes.extend([c.input_min.dtype(), c.input_max.dtype(), c.output_min.dtype(), c.output_max.dtype()]);
        }
        HostDtype::promote(&dtypes)?;
        let clipped = match self.clips {
            Some(c) => HostDtype::promote(&[x.dtype(), c.input_min.dtype(), c.input_max.dtype()])?,
            None => HostDtype::of(x.dtype())?,
        };
        let (affine, product) = match (w.quantization.mode(), w.biases) {
            (QuantizationMode::Affine, Some(biases)) => {
                let (s, b) = (HostDtype::of(w.scales.dtype())?, HostDtype::of(biases.dtype())?);
                (Some((s, b)), HostDtype::promote(&[clipped.dtype(), s.dtype(), b.dtype()])?)
            }
            _ => (None, clipped),
        };
        let fuse_bias = self.bias.is_none_or(|b| HostDtype::promote(&[product.dtype(), b.dtype()]) == Some(product));
        let fuse_out_clip = fuse_bias
            && self.clips.is_none_or(|c| {
                HostDtype::promote(&[product.dtype(), c.output_min.dtype(), c.output_max.dtype()]) == Some(product)
            });
        Some(Plan { x: HostDtype::of(x.dtype())?, affine, product, fuse_bias, fuse_out_clip })
    }

    fn kernel(&self, _: &Plan) -> HostKernel {
        HostKernel::QuantizedMatmul
    }

    fn on_host(&self, (m, k, n): Self::Checked, plan: Plan) -> Result<Array> {
        let y = with_host_dtype!(plan.product, O => self.product::<O>(m, k, n, plan))?;
        let y = match self.bias {
            Some(b) if !plan.fuse_bias => y.add(b)?,
            _ => y,
        };
        match self.clips {
            Some(c) if !plan.fuse_out_clip => c.clip_output(&y),
            _ => Ok(y),
        }
    }

    fn on_mlx(&self) -> Result<Array> {
        let (w, q) = (&self.w, self.w.quantization);
        let x = match self.clips {
            Some(c) => c.clip_input(self.x)?,
            None => self.x.clone(),
        };
        let y = x.quantized_matmul(
            w.weight,
            w.scales,
            w.biases,
            true,
            Some(q.group_size() as i32),
            Some(q.bits() as i32),
            q.mode().as_str(),
        )?;
        let y = match self.bias {
            Some(bias) => y.add(bias)?,
            None => y,
        };
        Ok(match self.clips {
            Some(c) => c.clip_output(&y)?,
            None => y,
        })
    }
}

impl QuantizedLinear<'_> {
    /// The host product in `O` (the plan's product dtype), with what the plan fuses.
    fn product<O: HostFloat>(&self, m: usize, k: usize, n: usize, plan: Plan) -> Result<Array> {
        let w = &self.w;
        let bias = self.bias.filter(|_| plan.fuse_bias).map(host::converted::<O>).transpose()?;
        let a_clip = self.clips.map(|c| c.input_f32()).transpose()?;
        let out_clip = self.clips.filter(|_| plan.fuse_out_clip).map(|c| c.output_as::<O>()).transpose()?;
        let options = GemmOptions { a_clip, bias: bias.as_deref(), out_clip };
        let mut out = host::output::<O>(&host::with_last(self.x.shape(), n))?;
        with_host_dtype!(plan.x, X => {
            host::with_host::<u32, _>(w.weight, |packed| {
                with_scales(w, plan.affine, |scales| {
                    let matrix = QuantizedMatrix::new(packed, scales, w.quantization, n, k)?;
                    host::with_host::<X, _>(self.x, |x| -> Result<()> {
                        Ok(quantized_matmul(MatRef::row_major(x, m, k)?, &matrix, &mut out, &options)?)
                    })?
                })
            })??;
        });
        Ok(out.into_array())
    }
}

/// Calls `f` with the scales (and, `affine` giving their dtypes, the biases) as the kernel
/// takes them.
fn with_scales<R>(
    w: &QuantizedWeight<'_>,
    affine: Option<(HostDtype, HostDtype)>,
    f: impl FnOnce(Scales<'_>) -> Result<R>,
) -> Result<R> {
    match (affine, w.biases) {
        (Some((scales_dtype, biases_dtype)), Some(biases)) => with_float_slice(w.scales, scales_dtype, |scales| {
            with_float_slice(biases, biases_dtype, |biases| f(Scales::Affine { scales, biases }))
        })??,
        _ => host::with_host::<u8, _>(w.scales, |scales| f(Scales::Fp(scales)))?,
    }
}

/// Calls `f` with `x`'s elements (of the host dtype `dtype`) as a [`FloatSlice`].
fn with_float_slice<R>(x: &Array, dtype: HostDtype, f: impl FnOnce(FloatSlice<'_>) -> R) -> Result<R> {
    match dtype {
        HostDtype::F32 => host::with_host::<f32, _>(x, |v| f(FloatSlice::F32(v))),
        HostDtype::Bf16 => host::with_host::<half::bf16, _>(x, |v| f(FloatSlice::Bf16(v))),
    }
}
