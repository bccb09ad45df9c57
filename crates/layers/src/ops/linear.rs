//! [`linear`]: `mlx.nn.Linear`, optionally between gemma4's clips.

use super::dispatch::{self, HostDtype, Op, with_host_dtype};
use super::host::{self, HostFloat};
use super::host_kernel::HostKernel;
use super::{ClipBounds, contract};
use crate::{Execution, Result};
use kernels::gemm::{GemmOptions, MatRef, gemm};
use tensor::Array;

const OP: &str = "linear";

/// `x Wᵀ (+ b)` for `x` `[…, in]`, `W` `[out, in]`, `b` `[out]`, with `clips` (0-d bounds)
/// around it as gemma4's `ClippableLinear` clamps:
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
    dispatch::run(execution, Linear { x, weight, bias, clips })
}

struct Linear<'a> {
    x: &'a Array,
    weight: &'a Array,
    bias: Option<&'a Array>,
    clips: Option<&'a ClipBounds>,
}

/// The host product's dtypes, and whether it fuses the output clip.
#[derive(Debug, Clone, Copy)]
struct Plan {
    x: HostDtype,
    weight: HostDtype,
    product: HostDtype,
    fuse_out_clip: bool,
}

impl Op for Linear<'_> {
    /// `(rows, in, out)`.
    type Checked = (usize, usize, usize);
    type Plan = Plan;

    fn check(&self) -> Result<Self::Checked> {
        let k = contract::last_extent(OP, "x", self.x)?;
        let (ws, n) = (self.weight.shape(), self.weight.dim(0).unwrap_or(0));
        if ws != [n, k] {
            return Err(contract::refuse(OP, format!("the weight must be [out, {k}], found {ws:?}")));
        }
        contract::product_epilogue(OP, self.x, n, self.bias, self.clips)
    }

    fn plan(&self) -> Option<Plan> {
        let clipped = match self.clips {
            Some(c) => HostDtype::promote(&[self.x.dtype(), c.input_min.dtype(), c.input_max.dtype()])?,
            None => HostDtype::of(self.x.dtype())?,
        };
        // `matmul` and `addmm` promote the (clipped) input, the weight and the bias.
        let (weight, bias) = (self.weight.dtype(), self.bias.map_or(clipped.dtype(), |b| b.dtype()));
        let product = HostDtype::promote(&[clipped.dtype(), weight, bias])?;
        let fuse_out_clip = self.clips.is_some_and(|c| {
            HostDtype::promote(&[product.dtype(), c.output_min.dtype(), c.output_max.dtype()]) == Some(product)
        });
        Some(Plan { x: HostDtype::of(self.x.dtype())?, weight: HostDtype::of(weight)?, product, fuse_out_clip })
    }

    fn kernel(&self, _: &Plan) -> HostKernel {
        HostKernel::Gemm
    }

    fn on_host(&self, (m, k, n): Self::Checked, plan: Plan) -> Result<Array> {
        let y = with_host_dtype!(plan.product, O => self.product::<O>(m, k, n, plan))?;
        match self.clips {
            Some(c) if !plan.fuse_out_clip => c.clip_output(&y),
            _ => Ok(y),
        }
    }

    fn on_mlx(&self) -> Result<Array> {
        let x = match self.clips {
            Some(c) => c.clip_input(self.x)?,
            None => self.x.clone(),
        };
        let weight_t = self.weight.t()?;
        let y = match self.bias {
            Some(bias) => bias.addmm(&x, &weight_t, 1.0, 1.0)?,
            None => x.matmul(&weight_t)?,
        };
        Ok(match self.clips {
            Some(c) => c.clip_output(&y)?,
            None => y,
        })
    }
}

impl Linear<'_> {
    /// The host product in `O` (the plan's product dtype), with the input clip and, when the
    /// plan fuses it, the output clip.
    fn product<O: HostFloat>(&self, m: usize, k: usize, n: usize, plan: Plan) -> Result<Array> {
        let bias = self.bias.map(host::converted::<O>).transpose()?;
        let a_clip = self.clips.map(|c| c.input_f32()).transpose()?;
        let out_clip = self.clips.filter(|_| plan.fuse_out_clip).map(|c| c.output_as::<O>()).transpose()?;
        let options = GemmOptions { a_clip, bias: bias.as_deref(), out_clip };
        let mut out = host::output::<O>(&host::with_last(self.x.shape(), n))?;
        with_host_dtype!(plan.x, A => with_host_dtype!(plan.weight, B => {
            host::with_two::<A, B, _>(self.x, self.weight, |a, w| {
                Ok(gemm(MatRef::row_major(a, m, k)?, MatRef::row_major(w, n, k)?.t(), &mut out, &options)?)
            })
        }))?;
        Ok(out.into_array())
    }
}
