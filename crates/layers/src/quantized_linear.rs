//! [`QuantizedLinear`]: `mlx.nn.QuantizedLinear`.

use crate::ops::{self, QuantizedWeight};
use crate::{ClipBounds, Error, Execution, Quantization, Result, Weights, quantization};
use tensor::{Array, Dtype, SharedArray};

/// An affine map whose weight is stored quantized, as `mlx.nn.QuantizedLinear.__call__`:
///
/// ```text
/// y = quantized_matmul(x, weight, scales, biases, transpose=True, group_size, bits, mode)
/// y = y + bias                              # only with a bias; an add, not addmm
/// ```
///
/// `weight` is uint32 `[out, in · bits / 32]` (MLX's packing), `scales` `[out, in / group]`
/// (float for affine, uint8 for mxfp4 / nvfp4 / mxfp8), `biases` (affine only) like the scales,
/// `bias` `[out]`. The input `[…, in]` is not cast: for affine MLX computes in the promotion of
/// the input's and the scales' dtypes, for the other modes in the input's dtype. Computed by
/// [`ops::quantized_linear`] with the block's [`Execution`].
///
/// Keys: `weight`, `scales`, `biases` (affine), `bias` (with a bias).
#[derive(Debug, Clone)]
pub struct QuantizedLinear {
    weight: SharedArray,
    scales: SharedArray,
    biases: Option<SharedArray>,
    bias: Option<SharedArray>,
    quantization: Quantization,
    execution: Execution,
}

impl QuantizedLinear {
    /// A quantized linear map from its packed weight, scales, per-group biases (affine only)
    /// and optional bias, checking that their dtypes and shapes fit together and `quantization`;
    /// computed by `execution`.
    pub fn new(
        weight: SharedArray,
        scales: SharedArray,
        biases: Option<SharedArray>,
        bias: Option<SharedArray>,
        quantization: Quantization,
        execution: Execution,
    ) -> Result<QuantizedLinear> {
        let invalid = |what: String| Error::Input { block: "QuantizedLinear", what };
        let (w, s) = (weight.shape(), scales.shape());
        if weight.dtype() != Dtype::U32 || w.len() != 2 {
            return Err(invalid(format!("the packed weight must be 2-D uint32, found {} {w:?}", weight.dtype())));
        }
        let in_dim = i64::from(w[1]) * 32 / quantization.bits() as i64;
        let groups = in_dim / quantization.group_size() as i64;
        if s.len() != 2 || i64::from(s[0]) != i64::from(w[0]) || i64::from(s[1]) != groups {
            return Err(invalid(format!(
                "scales {s:?} do not fit the packed weight {w:?} with {quantization} (expected [{}, {groups}])",
                w[0]
            )));
        }
        match (quantization::scales_dtype(quantization), scales.dtype()) {
            (Some(required), found) if found != required => {
                return Err(invalid(format!("{} scales must be {required}, found {found}", quantization.mode())));
            }
            (None, found) if !found.is_float() => {
                return Err(invalid(format!("affine scales must be a float type, found {found}")));
            }
            _ => {}
        }
        match (&biases, quantization.mode().has_biases()) {
            (None, true) => return Err(invalid("affine quantization needs per-group biases".into())),
            (Some(_), false) => {
                return Err(invalid(format!("{} quantization has no per-group biases", quantization.mode())));
            }
            (Some(b), true) if b.shape() != s || !b.dtype().is_float() => {
                return Err(invalid(format!("biases {} {:?} do not match the scales {s:?}", b.dtype(), b.shape())));
            }
            _ => {}
        }
        if let Some(b) = &bias
            && b.shape() != [w[0]]
        {
            return Err(invalid(format!("the bias has shape {:?}, expected [{}]", b.shape(), w[0])));
        }
        Ok(QuantizedLinear { weight, scales, biases, bias, quantization, execution })
    }

    /// Loads `weight` (uint32), `scales`, `biases` (affine) and, when `bias`, `bias` of an
    /// `[out_dim, in_dim]` map quantized as `quantization`. Float tensors (affine scales and
    /// biases, the bias) follow the view's compute dtype; packed ones keep theirs. Computed by the
    /// view's execution.
    pub fn load(
        weights: &Weights,
        in_dim: i32,
        out_dim: i32,
        bias: bool,
        quantization: Quantization,
    ) -> Result<QuantizedLinear> {
        let packed = quantization::packed_shape(quantization, in_dim, out_dim).ok_or_else(|| Error::Config {
            block: "QuantizedLinear",
            what: format!(
                "`{}`: input width {in_dim} is not a multiple of the group size {}",
                weights.prefix(),
                quantization.group_size()
            ),
        })?;
        let groups = quantization::scales_shape(quantization, in_dim, out_dim);
        let weight = weights.get_packed("weight", &packed, Dtype::U32)?;
        let scales = match quantization::scales_dtype(quantization) {
            Some(dtype) => weights.get_packed("scales", &groups, dtype)?,
            None => weights.get("scales", &groups)?,
        };
        let biases = if quantization.mode().has_biases() { Some(weights.get("biases", &groups)?) } else { None };
        let bias = if bias { Some(weights.get("bias", &[out_dim])?) } else { None };
        QuantizedLinear::new(weight, scales, biases, bias, quantization, weights.execution())
    }

    /// The packed weight, uint32 `[out, in · bits / 32]`.
    pub fn weight(&self) -> &SharedArray {
        &self.weight
    }

    /// The per-group scales, `[out, in / group]`.
    pub fn scales(&self) -> &SharedArray {
        &self.scales
    }

    /// The per-group biases (affine), `[out, in / group]`.
    pub fn biases(&self) -> Option<&SharedArray> {
        self.biases.as_ref()
    }

    /// The bias, `[out]`, if any.
    pub fn bias(&self) -> Option<&SharedArray> {
        self.bias.as_ref()
    }

    /// How the weight is quantized.
    pub fn quantization(&self) -> Quantization {
        self.quantization
    }

    /// Who computes the map.
    pub fn execution(&self) -> Execution {
        self.execution
    }

    /// `quantized_matmul(x, …, transpose=True)`, then `+ bias` with a bias.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_clipped(x, None)
    }

    /// `clip(x)` → this map → `clip(y)` (gemma4's `ClippableLinear`), without clips when `None`.
    pub(crate) fn forward_clipped(&self, x: &Array, clips: Option<&ClipBounds>) -> Result<Array> {
        let weight = QuantizedWeight {
            weight: &self.weight,
            scales: &self.scales,
            biases: self.biases.as_deref(),
            quantization: self.quantization,
        };
        ops::quantized_linear(self.execution, x, weight, self.bias.as_deref(), clips)
    }
}
