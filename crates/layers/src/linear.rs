//! [`Linear`]: `mlx.nn.Linear`.

use crate::host::{self, HostFloat, is_host_float, promote, with_host_float};
use crate::{Execution, Result, Weights};
use kernels::gemm::{GemmOptions, MatRef, gemm};
use tensor::{Array, Dtype, SharedArray};

/// An affine map `y = x Wᵀ (+ b)`, as `mlx.nn.Linear.__call__`:
/// - without bias: `matmul(x, transpose(W))`;
/// - with bias: `addmm(b, x, transpose(W))` (α = β = 1), one fused op, which in bf16 is not
///   bit-identical to a matmul followed by an add.
///
/// `W` is `[out, in]`, `b` is `[out]`; `x` is `[…, in]`. The input is not cast: mixed dtypes
/// promote as MLX promotes them (callers cast where the reference casts). With
/// [`Execution::Host`] the product runs as `kernels::gemm` (MLX's CPU bits) when `x`, `W`
/// and `b` are float32 or bf16.
#[derive(Debug, Clone)]
pub struct Linear {
    weight: SharedArray,
    bias: Option<SharedArray>,
    execution: Execution,
}

/// MLX `clip` bounds fused around a host product: `(lo, hi)` as 0-d arrays.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FusedClips<'a> {
    pub(crate) input: Option<(&'a Array, &'a Array)>,
    pub(crate) output: Option<(&'a Array, &'a Array)>,
}

impl Linear {
    /// A linear map from its weight `[out, in]` and optional bias `[out]`, computed by MLX.
    pub fn new(weight: SharedArray, bias: Option<SharedArray>) -> Linear {
        Linear { weight, bias, execution: Execution::Mlx }
    }

    /// Loads `weight` `[out_dim, in_dim]` and, when `bias`, `bias` `[out_dim]`.
    pub fn load(weights: &Weights, in_dim: i32, out_dim: i32, bias: bool) -> Result<Linear> {
        let weight = weights.get("weight", &[out_dim, in_dim])?;
        let bias = if bias { Some(weights.get("bias", &[out_dim])?) } else { None };
        Ok(Linear::new(weight, bias))
    }

    /// The same map computed by `execution`.
    pub fn with_execution(self, execution: Execution) -> Linear {
        Linear { execution, ..self }
    }

    /// The weight, `[out, in]`.
    pub fn weight(&self) -> &SharedArray {
        &self.weight
    }

    /// The bias, `[out]`, if any.
    pub fn bias(&self) -> Option<&SharedArray> {
        self.bias.as_ref()
    }

    /// `x @ W.T`, or `addmm(b, x, W.T)` with a bias.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        if self.execution == Execution::Host
            && let Some(y) = self.forward_on_host(x, FusedClips { input: None, output: None })?
        {
            return Ok(y);
        }
        self.forward_mlx(x)
    }

    /// MLX's ops.
    fn forward_mlx(&self, x: &Array) -> Result<Array> {
        let weight_t = self.weight.t()?;
        Ok(match &self.bias {
            Some(bias) => bias.addmm(x, &weight_t, 1.0, 1.0)?,
            None => x.matmul(&weight_t)?,
        })
    }

    /// `clip(x)` → this map → `clip(y)`, with the clips fused into one host product where the
    /// dtypes allow (`None` where they do not, or when this map runs on MLX: the caller
    /// then runs MLX's ops).
    pub(crate) fn forward_on_host(&self, x: &Array, clips: FusedClips<'_>) -> Result<Option<Array>> {
        if self.execution != Execution::Host {
            return Ok(None);
        }
        // The dtypes of MLX's steps: the clipped input, the product, the clipped output.
        let mut dtypes = vec![x.dtype(), self.weight.dtype()];
        let clipped = match clips.input {
            Some((lo, hi)) => promote_all(&[x.dtype(), lo.dtype(), hi.dtype()]),
            None => Some(x.dtype()),
        };
        let product = clipped.and_then(|c| promote_all(&[c, self.weight.dtype()]));
        let product = match (&self.bias, product) {
            (Some(b), Some(p)) => {
                dtypes.push(b.dtype());
                promote_all(&[p, b.dtype()])
            }
            (_, p) => p,
        };
        let Some(product) = product else { return Ok(None) };
        if let Some((lo, hi)) = clips.output
            && promote_all(&[product, lo.dtype(), hi.dtype()]) != Some(product)
        {
            // The output clip would change the dtype: not fused.
            return Ok(None);
        }
        if !dtypes.iter().all(|&d| is_host_float(d)) {
            return Ok(None);
        }
        let y = with_host_float!(product, O => self.product_on_host::<O>(x, clips)?);
        Ok(y)
    }

    /// The host product with output dtype `O` (checked by the caller).
    fn product_on_host<O: HostFloat>(&self, x: &Array, clips: FusedClips<'_>) -> Result<Array> {
        let shape = x.shape();
        let k = *shape.last().unwrap_or(&0) as usize;
        let n = self.weight.dim(0)? as usize;
        let m = x.size().checked_div(k).unwrap_or(0);
        let bias = self.bias.as_ref().map(|b| host::converted::<O>(b)).transpose()?;
        let options = GemmOptions {
            a_clip: clips
                .input
                .map(|(lo, hi)| Ok::<_, crate::Error>((scalar_f32(lo)?, scalar_f32(hi)?)))
                .transpose()?,
            bias: bias.as_deref(),
            out_clip: clips
                .output
                .map(|(lo, hi)| Ok::<_, crate::Error>((O::from_f32(scalar_f32(lo)?), O::from_f32(scalar_f32(hi)?))))
                .transpose()?,
        };
        let mut out = host::output::<O>(m * n);
        let run = with_host_float!(x.dtype(), A => with_host_float!(self.weight.dtype(), B => {
            host::with_two::<A, B, _>(x, &self.weight, |a, w| -> Result<()> {
                gemm(MatRef::row_major(a, m, k)?, MatRef::row_major(w, n, k)?.t(), &mut out, &options)?;
                Ok(())
            })
        }));
        run.flatten().ok_or_else(|| host::unsupported("linear", &[x.dtype(), self.weight.dtype()]))??;
        host::record("gemm");
        let mut out_shape = shape;
        if let Some(last) = out_shape.last_mut() {
            *last = n as i32;
        }
        host::from_host(out, &out_shape)
    }
}

/// MLX's promotion of several host floats, `None` if any is another dtype.
fn promote_all(dtypes: &[Dtype]) -> Option<Dtype> {
    dtypes.iter().try_fold(dtypes[0], |acc, &d| is_host_float(d).then(|| promote(acc, d)))
}

/// A 0-d float array's value as float32 (exact for the host floats).
fn scalar_f32(x: &Array) -> Result<f32> {
    Ok(x.astype(Dtype::F32)?.item::<f32>()?)
}
