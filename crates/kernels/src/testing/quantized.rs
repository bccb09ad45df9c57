//! Random quantized products for the tests of
//! [`quantized_matmul`](crate::quantized::quantized_matmul): every quantization MLX computes,
//! random packed codes, scales with the values that stress the rules, `x` in any layout,
//! biases and clips.

use super::gemm::{Layout, Operand, layout};
use crate::Float;
use crate::quantized::{FloatSlice, Quantization, QuantizationMode, QuantizedMatrix, Scales};
use proptest::prelude::*;
use std::ops::Range;

/// Every quantization MLX's CPU `quantized_matmul` computes.
pub fn quantizations() -> Vec<Quantization> {
    let mut all = vec![Quantization::MXFP4, Quantization::NVFP4, Quantization::MXFP8];
    for bits in [1, 2, 3, 4, 5, 6, 8] {
        for group in [32, 64, 128] {
            all.push(Quantization::affine(bits, group).expect("a served quantization"));
        }
    }
    all
}

/// Any of [`quantizations`].
pub fn quantization() -> impl Strategy<Value = Quantization> + Clone {
    prop::sample::select(quantizations())
}

/// uint8 scales: E8M0 exponents near 1 (most), any byte, or one of the bytes that stress the
/// decoders (E8M0 0, 1, 127, 254, 255; E4M3 0x7F and 0xFF (NaN), ±0, −1, 1, 448).
pub fn fp_scale() -> impl Strategy<Value = u8> + Clone {
    prop_oneof![
        6 => 112u8..142,
        3 => any::<u8>(),
        1 => prop::sample::select(vec![0u8, 1, 127, 254, 255, 0x7F, 0xFF, 0x80, 0xB8, 0x38, 0x7E]),
    ]
}

/// One product `x [m, k] · Wᵀ`, `W` `[n, k]` quantized as `quantization`: its values, and what
/// is fused around it.
#[derive(Debug, Clone)]
pub struct QuantizedCase {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub quantization: Quantization,
    /// `x`, row-major.
    pub x: Vec<f32>,
    pub x_layout: Layout,
    pub packed: Vec<u32>,
    /// Affine scales and biases (`[n, k / group]`), as values cast to the scales' dtype.
    pub scales: Vec<f32>,
    pub biases: Vec<f32>,
    /// The fp modes' uint8 scales.
    pub fp_scales: Vec<u8>,
    pub bias: Option<Vec<f32>>,
    pub a_clip: Option<(f32, f32)>,
    pub out_clip: Option<(f32, f32)>,
}

impl QuantizedCase {
    /// `x` in `X`, in its layout.
    pub fn x<X: Float>(&self) -> Operand<X> {
        Operand::new(&self.x, self.m, self.k, self.x_layout)
    }

    /// The affine scales and biases in `S`.
    pub fn affine<S: Float>(&self) -> (Vec<S>, Vec<S>) {
        (super::cast(&self.scales), super::cast(&self.biases))
    }

    /// The matrix, its affine scales and biases from `affine` (ignored by the fp modes).
    pub fn matrix<'a, S: Float>(&'a self, affine: &'a (Vec<S>, Vec<S>)) -> QuantizedMatrix<'a>
    where
        &'a [S]: Into<FloatSlice<'a>>,
    {
        let scales = match self.quantization.mode() {
            QuantizationMode::Affine => {
                Scales::Affine { scales: affine.0.as_slice().into(), biases: affine.1.as_slice().into() }
            }
            _ => Scales::Fp(&self.fp_scales),
        };
        QuantizedMatrix::new(&self.packed, scales, self.quantization, self.n, self.k).expect("the case is consistent")
    }

    /// The bias in `O`.
    pub fn bias<O: Float>(&self) -> Option<Vec<O>> {
        self.bias.as_deref().map(super::cast)
    }
}

/// Products with `m` and `n` from `extents` and `K = groups · group` (`groups` from
/// `extents`), of `quantization`; `x`'s elements (and a bias's, half the time) from `values`,
/// the affine scales and biases from `params`, half the time a clip of `x` and one of the
/// output with bounds from `clip`.
pub fn quantized_cases<Q, S, P>(
    quantization: Q,
    extents: (Range<usize>, Range<usize>, Range<usize>),
    values: S,
    params: P,
    clip: (Range<f32>, Range<f32>),
) -> impl Strategy<Value = QuantizedCase>
where
    Q: Strategy<Value = Quantization>,
    S: Strategy<Value = f32> + Clone + 'static,
    P: Strategy<Value = f32> + Clone + 'static,
{
    (quantization, extents.0, extents.1, extents.2)
        .prop_flat_map(move |(quantization, m, groups, n)| {
            let k = groups * quantization.group_size();
            let words = n * k * quantization.bits() / 32;
            let scales = n * groups;
            (
                Just((quantization, m, k, n)),
                prop::collection::vec(values.clone(), m * k),
                layout(),
                prop::collection::vec(any::<u32>(), words),
                prop::collection::vec(params.clone(), scales),
                prop::collection::vec(params.clone(), scales),
                prop::collection::vec(fp_scale(), scales),
                prop::option::of(prop::collection::vec(values.clone(), n)),
                (prop::option::of(clip.clone()), prop::option::of(clip.clone())),
            )
        })
        .prop_map(
            |((quantization, m, k, n), x, x_layout, packed, scales, biases, fp_scales, bias, (a_clip, out_clip))| {
                QuantizedCase {
                    m,
                    k,
                    n,
                    quantization,
                    x,
                    x_layout,
                    packed,
                    scales,
                    biases,
                    fp_scales,
                    bias,
                    a_clip,
                    out_clip,
                }
            },
        )
}
