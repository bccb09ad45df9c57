//! [`OneBitLinear`]: mlx-vlm's `OneBitLinear`, the module it loads 1-bit affine linears as.

use crate::{ClipBounds, Error, Execution, Quantization, Result, Weights, ops, quantization};
use tensor::{Array, Dtype, SharedArray};

/// A linear map whose weight is stored affine-quantized with 1 bit per weight, as mlx-vlm 0.7.10
/// runs it (`mlx_vlm.quantization.one_bit.OneBitLinear`, which its loader substitutes for every
/// `nn.Linear` whose quantization has `bits == 1`; stock MLX's `quantized_matmul` is not used).
/// On the CPU (no Metal kernel) its `__call__` is:
///
/// ```text
/// bits = ((weight[..., None] >> arange(32)) & 1).reshape(out, in)          # uint32
/// s, b = (broadcast_to(t[..., None], (out, in / group, group)).reshape(out, in) for t in (scales, biases))
/// w = (bits.astype(scales.dtype) * s + b).astype(x.dtype)                  # dequantize_one_bit
/// y = (x.reshape(-1, in) @ w.T).reshape(*x.shape[:-1], out)
/// y = y + bias                                                             # with a bias: an add
/// ```
///
/// `weight` is uint32 `[out, in / 32]`, `scales` and `biases` `[out, in / group]` (group 32, 64
/// or 128), `bias` `[out]`. The dequantized weight depends on the stored tensors only, so it is
/// computed once, here, with the same MLX ops; a forward casts it to the input's dtype and runs
/// the product as [`ops::linear`] with the block's [`Execution`]. gemma4's clips around it are
/// MLX's `clip` ops.
///
/// Keys: `weight`, `scales`, `biases`, `bias` (with a bias).
#[derive(Debug, Clone)]
pub struct OneBitLinear {
    dense: SharedArray,
    bias: Option<SharedArray>,
    quantization: Quantization,
    execution: Execution,
}

impl OneBitLinear {
    /// The map of the packed `weight`, `scales`, `biases` and optional `bias`, checking their
    /// dtypes and shapes against each other and `group_size` (32, 64 or 128); computed by
    /// `execution`.
    pub fn new(
        weight: &Array,
        scales: &Array,
        biases: &Array,
        bias: Option<SharedArray>,
        group_size: i32,
        execution: Execution,
    ) -> Result<OneBitLinear> {
        let invalid = |what: String| Error::Input { block: "OneBitLinear", what };
        let group = usize::try_from(group_size).map_err(|_| invalid(format!("a group size of {group_size}")))?;
        let quantization = Quantization::affine(1, group)?;
        let (w, s) = (weight.shape(), scales.shape());
        let &[out, words] = w.as_slice() else {
            return Err(invalid(format!("the packed weight must be 2-D, found {w:?}")));
        };
        if weight.dtype() != Dtype::U32 {
            return Err(invalid(format!("the packed weight must be uint32, found {}", weight.dtype())));
        }
        let in_dim = i64::from(words) * 32;
        let groups = in_dim / i64::from(group_size);
        if s.len() != 2 || s[0] != out || i64::from(s[1]) != groups || biases.shape() != s {
            return Err(invalid(format!(
                "scales {s:?} and biases {:?} do not fit the packed weight {w:?} in groups of {group_size}",
                biases.shape()
            )));
        }
        if !scales.dtype().is_float() || !biases.dtype().is_float() {
            return Err(invalid(format!(
                "scales and biases must be floats, found {} and {}",
                scales.dtype(),
                biases.dtype()
            )));
        }
        if let Some(b) = &bias
            && b.shape() != [out]
        {
            return Err(invalid(format!("the bias has shape {:?}, expected [{out}]", b.shape())));
        }
        let dense = SharedArray::new(dequantize(weight, scales, biases, group_size)?)?;
        Ok(OneBitLinear { dense, bias, quantization, execution })
    }

    /// Loads `weight` (uint32), `scales`, `biases` and, when `bias`, `bias` of an `[out_dim,
    /// in_dim]` map quantized as `quantization` (affine, 1 bit). Float tensors follow the view's
    /// compute dtype; computed by the view's execution.
    pub fn load(
        weights: &Weights,
        in_dim: i32,
        out_dim: i32,
        bias: bool,
        quantization: Quantization,
    ) -> Result<OneBitLinear> {
        let packed = quantization::packed_shape(quantization, in_dim, out_dim).ok_or_else(|| Error::Config {
            block: "OneBitLinear",
            what: format!(
                "`{}`: input width {in_dim} is not a multiple of the group size {}",
                weights.prefix(),
                quantization.group_size()
            ),
        })?;
        let groups = quantization::scales_shape(quantization, in_dim, out_dim);
        let weight = weights.get_packed("weight", &packed, Dtype::U32)?;
        let scales = weights.get("scales", &groups)?;
        let biases = weights.get("biases", &groups)?;
        let bias = if bias { Some(weights.get("bias", &[out_dim])?) } else { None };
        OneBitLinear::new(&weight, &scales, &biases, bias, quantization.group_size() as i32, weights.execution())
    }

    /// The dequantized weight `[out, in]`, in the promotion of the scales' and biases' dtypes.
    pub fn dense_weight(&self) -> &SharedArray {
        &self.dense
    }

    /// The bias, `[out]`, if any.
    pub fn bias(&self) -> Option<&SharedArray> {
        self.bias.as_ref()
    }

    /// How the weight is quantized (affine, 1 bit).
    pub fn quantization(&self) -> Quantization {
        self.quantization
    }

    /// Who computes the product.
    pub fn execution(&self) -> Execution {
        self.execution
    }

    /// `OneBitLinear.__call__` on `x` `[…, in]`.
    pub fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_clipped(x, None)
    }

    /// `clip(x)` → this map → `clip(y)` (gemma4's `ClippableLinear`), without clips when `None`.
    pub(crate) fn forward_clipped(&self, x: &Array, clips: Option<&ClipBounds>) -> Result<Array> {
        let x = match clips {
            Some(c) => c.clip_input(x)?,
            None => x.clone(),
        };
        let dense =
            if self.dense.dtype() == x.dtype() { (*self.dense).clone() } else { self.dense.astype(x.dtype())? };
        let shape = x.shape();
        let in_dim = dense.dim(1)?;
        let rows = x.reshape(&[-1, in_dim])?;
        let y = ops::linear(self.execution, &rows, &dense, None, None)?;
        let mut out_shape = shape;
        if let Some(last) = out_shape.last_mut() {
            *last = dense.dim(0)?;
        }
        let y = y.reshape(&out_shape)?;
        let y = match &self.bias {
            Some(bias) => y.add(&**bias)?,
            None => y,
        };
        Ok(match clips {
            Some(c) => c.clip_output(&y)?,
            None => y,
        })
    }
}

/// `dequantize_one_bit(weight, scales, biases, group_size)`: the codes unpacked (bit `j` of word
/// `i` of a row is weight `32 i + j`; integer shifts and masks, exact on the host), then
/// `bits.astype(scales.dtype) * scales + biases` with the scales and biases repeated over their
/// groups, in MLX's ops.
fn dequantize(weight: &Array, scales: &Array, biases: &Array, group_size: i32) -> Result<Array> {
    let (out, words) = (weight.dim(0)?, weight.dim(1)?);
    let in_dim = words * 32;
    let codes: Vec<u32> = weight.to_vec::<u32>()?.iter().flat_map(|&w| (0..32).map(move |j| (w >> j) & 1)).collect();
    let bits = Array::from_vec(codes, &[out, in_dim])?;
    let groups = scales.dim(1)?;
    let expand = |t: &Array| -> Result<Array> {
        Ok(t.expand_dims(-1)?.broadcast_to(&[out, groups, group_size])?.reshape(&[out, in_dim])?)
    };
    Ok(bits.astype(scales.dtype())?.mul(&expand(scales)?)?.add(&expand(biases)?)?)
}
