//! [`QuantizedMatrix`]: a checked view of MLX's three (or four) buffers of a quantized
//! `[N, K]` matrix, as `quantized_matmul(x, w, scales, biases, transpose=True)` takes them.

use super::format::{Quantization, QuantizationMode, bytes};
use crate::{ElementType, Error, Float, Result};
use half::bf16;

/// A row-major float buffer of either host dtype (MLX's float32 or bfloat16 arrays).
#[derive(Debug, Clone, Copy)]
pub enum FloatSlice<'a> {
    F32(&'a [f32]),
    Bf16(&'a [bf16]),
}

impl FloatSlice<'_> {
    pub fn dtype(&self) -> ElementType {
        match self {
            FloatSlice::F32(_) => ElementType::F32,
            FloatSlice::Bf16(_) => ElementType::Bf16,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            FloatSlice::F32(values) => values.len(),
            FloatSlice::Bf16(values) => values.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` cast to `T` as MLX's `astype` casts.
    #[inline(always)]
    pub(crate) fn get<T: Float>(&self, i: usize) -> T {
        match self {
            FloatSlice::F32(values) => T::from_f32(values[i]),
            FloatSlice::Bf16(values) => T::from_f32(values[i].to_f32()),
        }
    }
}

impl<'a> From<&'a [f32]> for FloatSlice<'a> {
    fn from(values: &'a [f32]) -> Self {
        FloatSlice::F32(values)
    }
}

impl<'a> From<&'a [bf16]> for FloatSlice<'a> {
    fn from(values: &'a [bf16]) -> Self {
        FloatSlice::Bf16(values)
    }
}

/// The per-group parameters of a quantized matrix, `[N, K / group]` row-major each.
#[derive(Debug, Clone, Copy)]
pub enum Scales<'a> {
    /// Affine: float scales and biases (each cast to the product's dtype, as MLX's
    /// `quantized_matmul` casts them to the promoted dtype).
    Affine { scales: FloatSlice<'a>, biases: FloatSlice<'a> },
    /// mxfp4, nvfp4, mxfp8: uint8 scales (E8M0, or E4M3 for nvfp4).
    Fp(&'a [u8]),
}

/// A quantized `[N, K]` matrix `W` as MLX stores it: `packed` uint32 `[N, K · bits / 32]`
/// (MLX's packing: each row a little-endian bitstream of `bits`-bit codes, read as bytes in
/// memory order), the [`Scales`] `[N, K / group]`, checked against each other and the
/// [`Quantization`] at construction.
#[derive(Debug, Clone, Copy)]
pub struct QuantizedMatrix<'a> {
    packed: &'a [u32],
    scales: Scales<'a>,
    quantization: Quantization,
    n: usize,
    k: usize,
}

impl<'a> QuantizedMatrix<'a> {
    /// The `[n, k]` matrix held by `packed` and `scales` under `quantization`. [`Error::Shape`]
    /// unless `k` is a multiple of the group size, `packed` holds `n · k · bits / 32` words,
    /// the scales (and biases) `n · k / group` values, and the scales are those of the mode
    /// (float scales and biases for affine, uint8 scales otherwise).
    pub fn new(
        packed: &'a [u32],
        scales: Scales<'a>,
        quantization: Quantization,
        n: usize,
        k: usize,
    ) -> Result<QuantizedMatrix<'a>> {
        let fail = |what: String| Err(Error::shape("quantized_matmul", what));
        let group = quantization.group_size();
        if !k.is_multiple_of(group) {
            return fail(format!("K = {k} is not a multiple of the group size {group}"));
        }
        // `k · bits` is a multiple of 32 for every served quantization and multiple of the group.
        let Some(words) = k.checked_mul(quantization.bits()).and_then(|bits| n.checked_mul(bits / 32)) else {
            return fail(format!("{n} × {k} overflows"));
        };
        if packed.len() != words {
            return fail(format!(
                "the packed weight holds {} words, [{n}, {k}] at {} bits needs {words}",
                packed.len(),
                quantization.bits()
            ));
        }
        let groups = n * (k / group);
        let lengths: &[(&str, usize)] = match (quantization.mode(), &scales) {
            (QuantizationMode::Affine, Scales::Affine { scales, biases }) => {
                &[("scales", scales.len()), ("biases", biases.len())]
            }
            (QuantizationMode::Affine, Scales::Fp(_)) => {
                return fail("affine quantization needs float scales and biases".into());
            }
            (mode, Scales::Affine { .. }) => return fail(format!("{mode} quantization has uint8 scales, no biases")),
            (_, Scales::Fp(scales)) => &[("scales", scales.len())],
        };
        for &(name, len) in lengths {
            if len != groups {
                return fail(format!("{name} hold {len} values, [{n}, {}] needs {groups}", k / group));
            }
        }
        Ok(QuantizedMatrix { packed, scales, quantization, n, k })
    }

    /// Rows of `W` (the product's output columns).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Columns of `W` (the product's inner dimension).
    pub fn k(&self) -> usize {
        self.k
    }

    pub fn quantization(&self) -> Quantization {
        self.quantization
    }

    pub fn scales(&self) -> Scales<'a> {
        self.scales
    }

    /// The packed weight's bytes in memory order, as MLX reads them.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        bytes(self.packed)
    }

    /// The packed bytes of row `n` of `W` (`K · bits / 8`).
    pub(crate) fn row(&self, n: usize) -> &'a [u8] {
        let len = self.k * self.quantization.bits() / 8;
        &self.bytes()[n * len..(n + 1) * len]
    }

    /// The dtype MLX's `quantized_matmul` computes in and returns for an `x` of dtype `x` (as
    /// the op receives it, after any clip): for affine the promotion of `x`'s, the scales' and
    /// the biases' dtypes (float32 if any is), for the fp modes `x`'s.
    pub fn product_dtype(&self, x: ElementType) -> ElementType {
        match self.scales {
            Scales::Affine { scales, biases } if [scales.dtype(), biases.dtype()].contains(&ElementType::F32) => {
                ElementType::F32
            }
            _ => x,
        }
    }

    /// Groups per row, `K / group`.
    pub(crate) fn groups(&self) -> usize {
        self.k / self.quantization.group_size()
    }
}
